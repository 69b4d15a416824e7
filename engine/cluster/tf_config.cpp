// Parses TF_CONFIG (TensorFlow's JSON cluster description) into a ClusterSpec
// and this process's TaskSpec; validation against the cluster is cluster.cpp's.
#include "engine/cluster/tf_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/base/did_you_mean.hpp"

namespace dtrain {
namespace {

using Json = nlohmann::json;

constexpr const char* kExample =
    R"(TF_CONFIG must be a JSON object like {"cluster": {"worker": ["host1:2222", "host2:2222"]}, )"
    R"("task": {"type": "worker", "index": 0}})";

Error bad(const std::string& what) { return config_error("TF_CONFIG: " + what); }

// The JSON value's type as a user reads it.
std::string kind(const Json& j) {
  if (j.is_string()) return "the string " + j.dump();
  if (j.is_number()) return "the number " + j.dump();
  return std::string(j.type_name());
}

// task.index: an integer or a string Python's int() accepts (digits, optional
// sign, surrounding whitespace).
Result<int64_t> parse_index(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  } else if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    std::string t = s.substr(b, e - b);
    bool negative = false;
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
      negative = t[0] == '-';
      t.erase(0, 1);
    }
    bool digits = !t.empty() && t.size() <= 15;
    for (char c : t) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (digits) return (negative ? -1 : 1) * static_cast<int64_t>(std::stoll(t));
  }
  return bad(fmt::format("task.index is {}; it must be a whole number such as 0 or \"0\"", kind(j)));
}

// One task type's sparse object {"0": "h0:2222", "3": "h3:2222"}: the
// addresses in index order, and those indices.
Status read_sparse(const std::string& type, const Json& object, std::vector<std::string>& addresses,
                   std::vector<int64_t>& indices) {
  std::map<int64_t, std::pair<std::string, std::string>> by_index;  // index -> (key, address)
  for (const auto& [key, address] : object.items()) {
    auto index = parse_index(Json(key));
    if (!index || *index < 0) {
      return bad(fmt::format("cluster.{}: the key \"{}\" is not a task index; a sparse task list maps whole numbers "
                             ">= 0 to addresses, e.g. {{\"0\": \"host0:2222\", \"3\": \"host3:2222\"}}",
                             type, key));
    }
    if (!address.is_string())
      return bad(fmt::format("cluster.{}[\"{}\"] is {}; addresses are \"host:port\" strings", type, key, kind(address)));
    if (auto seen = by_index.find(*index); seen != by_index.end()) {
      return bad(fmt::format("cluster.{}: task index {} is given twice, as \"{}\" and \"{}\"", type, *index,
                             seen->second.first, key));
    }
    by_index[*index] = {key, address.get<std::string>()};
  }
  for (auto& [index, entry] : by_index) {
    indices.push_back(index);
    addresses.push_back(std::move(entry.second));
  }
  return Status::Ok();
}

// The cluster's task types; `sparse` receives the indices of each type given
// as an object, `master` whether the TF 1.x "master" key was read as chief.
Status read_cluster(const Json& c, ClusterSpec& out, std::map<std::string, std::vector<int64_t>>& sparse,
                    bool& master) {
  if (!c.is_object())
    return bad(fmt::format("\"cluster\" is {}; it must be an object mapping task types to lists of \"host:port\"",
                           kind(c)));
  if (c.contains("master") && c.contains("chief")) {
    return bad("cluster lists both \"master\" and \"chief\"; master is TF 1.x's name for the chief (TensorFlow's "
               "RunConfig treats it as the chief), so give only one of them");
  }
  for (const auto& [key, list] : c.items()) {
    master = master || key == "master";
    const std::string type = key == "master" ? "chief" : key;
    bool known = false;
    for (const auto& t : task_types()) known = known || t == type;
    if (!known)
      return bad(fmt::format("cluster.{}: \"{}\" is not one of chief, worker, ps, evaluator{}", type, type,
                             did_you_mean(type, task_types())));
    std::vector<std::string> addresses;
    if (list.is_object()) {
      std::vector<int64_t> indices;
      if (Status s = read_sparse(key, list, addresses, indices); !s) return s;
      bool dense = true;
      for (size_t i = 0; i < indices.size(); ++i) dense = dense && indices[i] == static_cast<int64_t>(i);
      if (!dense) sparse[type] = std::move(indices);
    } else if (list.is_array()) {
      for (size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_string())
          return bad(fmt::format("cluster.{}[{}] is {}; addresses are \"host:port\" strings", key, i, kind(list[i])));
        addresses.push_back(list[i].get<std::string>());
      }
    } else {
      return bad(fmt::format("cluster.{} is {}; it must be a list of \"host:port\" strings, e.g. [\"host1:2222\"], or "
                             "an object of task index to address, e.g. {{\"0\": \"host1:2222\"}}",
                             key, kind(list)));
    }
    if (!addresses.empty()) out.tasks[type] = std::move(addresses);
  }
  return Status::Ok();
}

}  // namespace

Result<TfConfig> parse_tf_config(std::string_view text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number beyond a double
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
    if (const size_t p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
    return bad(fmt::format("invalid JSON: {}; {}", what, kExample));
  }
  if (!j.is_object()) return bad(fmt::format("the value is {}; {}", kind(j), kExample));
  TfConfig out;
  std::map<std::string, std::vector<int64_t>> sparse;
  bool master = false;
  if (auto c = j.find("cluster"); c != j.end() && !c->is_null())
    if (Status s = read_cluster(*c, out.cluster, sparse, master); !s) return s.error();
  if (master) out.notes.push_back("TF_CONFIG: cluster.master read as the chief (TF 1.x's name; TensorFlow's RunConfig "
                                  "treats it as the chief)");
  for (const auto& [type, indices] : sparse) {
    std::vector<std::string> pairs;
    for (size_t i = 0; i < indices.size(); ++i) pairs.push_back(fmt::format("{} -> {} {}", indices[i], type, i));
    out.notes.push_back(fmt::format("TF_CONFIG: cluster.{} is sparse (task indices {}); dtrain numbers those tasks in "
                                    "index order: {}",
                                    type, fmt::join(indices, ", "), fmt::join(pairs, ", ")));
  }
  auto t = j.find("task");
  if (t == j.end() || t->is_null()) return out;
  if (!t->is_object())
    return bad(fmt::format("\"task\" is {}; it must be an object like {{\"type\": \"worker\", \"index\": 0}}",
                           kind(*t)));
  auto type = t->find("type");
  if (type == t->end() || type->is_null() || (type->is_string() && type->get_ref<const std::string&>().empty()))
    return bad("task.type is missing; set it to chief, worker, ps or evaluator, e.g. "
               "\"task\": {\"type\": \"worker\", \"index\": 0}");
  if (!type->is_string())
    return bad(fmt::format("task.type is {}; it must be one of \"chief\", \"worker\", \"ps\", \"evaluator\"",
                           kind(*type)));
  out.task.type = type->get<std::string>();
  if (out.task.type == "master") {
    out.task.type = "chief";
    out.notes.push_back("TF_CONFIG: task type master read as chief (TF 1.x's name for it, as TensorFlow's RunConfig "
                        "reads it)");
  }
  auto index = t->find("index");
  if (index == t->end() || index->is_null())
    return bad(fmt::format("task.index is missing; set it to this process's position in cluster.{}, e.g. "
                           "\"task\": {{\"type\": \"{}\", \"index\": 0}}",
                           out.task.type, out.task.type));
  auto i = parse_index(*index);
  if (!i) return i.error();
  out.task.index = *i;
  if (auto it = sparse.find(out.task.type); it != sparse.end()) {
    const std::vector<int64_t>& indices = it->second;
    const auto at = std::find(indices.begin(), indices.end(), out.task.index);
    if (at == indices.end()) {
      return bad(fmt::format("task {{type: {}, index: {}}} but the sparse cluster.{} lists only the task indices {}",
                             out.task.type, out.task.index, out.task.type, fmt::join(indices, ", ")));
    }
    out.task.index = at - indices.begin();
  }
  return out;
}

}  // namespace dtrain
