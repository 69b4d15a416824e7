// The HParams plugin's summaries (engine/io/hparams_summary.hpp).
#include "engine/io/hparams_summary.hpp"

#include "event.pb.h"
#include "hparams_plugin.pb.h"

namespace dtrain {
namespace {

namespace hp = tensorboard::hparams;

// The serialized Summary of one hparams value (summary_v2._summary_pb).
std::string plugin_summary(const char* tag, const hp::HParamsPluginData& data) {
  tensorflow::Summary summary;
  tensorflow::Summary::Value* v = summary.add_value();
  v->set_tag(tag);
  auto* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name("hparams");
  plugin->set_content(data.SerializeAsString());
  // metadata.NULL_TENSOR: make_tensor_proto([], dtype=DT_FLOAT, shape=(0,)).
  tensorflow::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tensorflow::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  return summary.SerializeAsString();
}

hp::DataType type_of(const HParam& h) {
  if (std::holds_alternative<std::string>(h.value)) return hp::DATA_TYPE_STRING;
  if (std::holds_alternative<bool>(h.value)) return hp::DATA_TYPE_BOOL;
  return hp::DATA_TYPE_FLOAT64;
}

}  // namespace

Status write_hparams_experiment(SummaryWriter& writer, int64_t step, const std::vector<HParam>& hparams,
                                const std::vector<HParamMetric>& metrics, double time_created_secs) {
  hp::HParamsPluginData data;
  data.set_version(0);
  hp::Experiment* e = data.mutable_experiment();
  e->set_time_created_secs(time_created_secs);
  for (const HParam& h : hparams) {
    hp::HParamInfo* info = e->add_hparam_infos();
    info->set_name(h.name);
    info->set_description(h.description);
    info->set_type(type_of(h));
  }
  for (const HParamMetric& m : metrics) {
    hp::MetricInfo* info = e->add_metric_infos();
    info->mutable_name()->set_group(m.group);
    info->mutable_name()->set_tag(m.tag);
    info->set_description(m.description);
    info->set_dataset_type(m.validation ? hp::DATASET_VALIDATION : hp::DATASET_TRAINING);
  }
  return writer.raw_summary(step, plugin_summary("_hparams_/experiment", data));
}

Status write_hparams_session_start(SummaryWriter& writer, int64_t step, const std::vector<HParam>& hparams,
                                   const std::string& model_uri, double start_time_secs) {
  hp::HParamsPluginData data;
  data.set_version(0);
  hp::SessionStartInfo* s = data.mutable_session_start_info();
  s->set_model_uri(model_uri);
  s->set_start_time_secs(start_time_secs);
  for (const HParam& h : hparams) {
    google::protobuf::Value& v = (*s->mutable_hparams())[h.name];
    if (const auto* str = std::get_if<std::string>(&h.value)) {
      v.set_string_value(*str);
    } else if (const auto* b = std::get_if<bool>(&h.value)) {
      v.set_bool_value(*b);
    } else {
      v.set_number_value(std::get<double>(h.value));
    }
  }
  return writer.raw_summary(step, plugin_summary("_hparams_/session_start_info", data));
}

Status write_hparams_session_end(SummaryWriter& writer, int64_t step, SessionStatus status, double end_time_secs) {
  hp::HParamsPluginData data;
  data.set_version(0);
  hp::SessionEndInfo* e = data.mutable_session_end_info();
  e->set_status(static_cast<hp::Status>(status));
  e->set_end_time_secs(end_time_secs);
  return writer.raw_summary(step, plugin_summary("_hparams_/session_end_info", data));
}

}  // namespace dtrain
