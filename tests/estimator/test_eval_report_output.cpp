// The evaluation report as `dtrain evaluate` prints it and as
// eval/metrics-<step>.json holds it: full texts pinned for a small and a
// many-class report, a binary output without AUC, regression and named outputs.
#include <doctest.h>

#include "estimator/eval_report_output.hpp"

namespace dtrain {
namespace {

OutputReport classification(std::vector<std::vector<int64_t>> confusion, std::string name = "") {
  OutputReport r;
  r.output = std::move(name);
  r.loss = "sparse_softmax_cross_entropy";
  r.kind = "classification";
  r.classification = report_from_confusion(std::move(confusion));
  return r;
}

}  // namespace

TEST_CASE("eval report text: per-class table, averages and confusion matrix") {
  const std::string text = report_text({classification({{5, 1, 0}, {2, 3, 0}, {0, 0, 0}})}, "m/eval/metrics-9.json");
  CHECK(text ==
        "class         precision  recall      f1  support\n"
        "0                0.7143  0.8333  0.7692        6\n"
        "1                0.7500  0.6000  0.6667        5\n"
        "2                0.0000  0.0000  0.0000        0\n"
        "macro avg        0.4881  0.4778  0.4786       11\n"
        "micro avg        0.7273  0.7273  0.7273       11\n"
        "weighted avg     0.7305  0.7273  0.7226       11\n"
        "accuracy                         0.7273       11\n"
        "confusion matrix (rows: true class, columns: predicted class):\n"
        "   0  1  2\n"
        "0  5  1  0\n"
        "1  2  3  0\n"
        "2  0  0  0\n");
}

TEST_CASE("eval report text: above 20 classes, the 10 of lowest recall and no printed matrix") {
  // Class k: 10 right and k taken for class k + 1, recall 10 / (10 + k).
  std::vector<std::vector<int64_t>> m(25, std::vector<int64_t>(25, 0));
  for (size_t k = 0; k < 25; ++k) {
    m[k][k] = 10;
    m[k][(k + 1) % 25] += static_cast<int64_t>(k);
  }
  OutputReport r = classification(m);
  r.classification.top_k_accuracy = 0.96;
  const std::string text = report_text({r}, "m/eval/metrics-9.json");
  const std::string head =
      "the 10 classes of lowest recall of 25 (every class in m/eval/metrics-9.json):\n"
      "class         precision  recall      f1  support\n"
      "24               0.3030  0.2941  0.2985       34\n"
      "23               0.3125  0.3030  0.3077       33\n";
  CHECK(text.substr(0, head.size()) == head);
  CHECK(text.find("\n14 ") == std::string::npos);  // the 11th worst is left out
  CHECK(text.find("\n15 ") != std::string::npos);
  CHECK(text.find("top-5 accuracy 0.9600 (25 classes)\n") != std::string::npos);
  CHECK(text.substr(text.size() - 98) ==
        "confusion matrix: 25 x 25, in m/eval/metrics-9.json and as an image in TensorBoard (eval, Images)\n");
}

TEST_CASE("eval report text and JSON: binary without AUC, regression, named outputs") {
  OutputReport b = classification({{3, 1}, {0, 0}}, "spam");
  b.classification.binary = true;  // roc_auc empty: one class only
  OutputReport reg;
  reg.output = "price";
  reg.loss = "mean_squared_error";
  reg.kind = "regression";
  reg.regression = {4, 0.25, 0.5, 0.8};
  const std::string text = report_text({b, reg}, "x.json");
  CHECK(text.rfind("output spam (sparse_softmax_cross_entropy):\nclass", 0) == 0);
  CHECK(text.find("roc auc: undefined (the evaluated set holds one class only)\n") != std::string::npos);
  CHECK(text.find("output price (mean_squared_error):\nmae 0.250000  rmse 0.500000  r2 0.800000  (4 values)\n") !=
        std::string::npos);

  const nlohmann::json j = report_json({b, reg});
  REQUIRE(j["outputs"].size() == 2);
  const nlohmann::json& c = j["outputs"][0];
  CHECK(c["output"] == "spam");
  CHECK(c["kind"] == "classification");
  CHECK(c["roc_auc"].is_null());
  CHECK(c["confusion_matrix"] == nlohmann::json::parse("[[3, 1], [0, 0]]"));
  CHECK(c["per_class"][0] == nlohmann::json::parse(R"({"class": "0", "precision": 1.0, "recall": 0.75,
                                                        "f1": 0.8571428571428571, "support": 4})"));
  CHECK(c["precision_macro"] == 0.5);
  CHECK(c.contains("f1_micro"));
  CHECK(c.contains("recall_weighted"));
  CHECK_FALSE(c.contains("top_5_accuracy"));
  CHECK(j["outputs"][1] == nlohmann::json::parse(R"({"output": "price", "loss": "mean_squared_error",
      "kind": "regression", "values": 4, "mae": 0.25, "rmse": 0.5, "r2": 0.8})"));
}

}  // namespace dtrain
