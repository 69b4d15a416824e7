// run.warm_start: selects, renames and copies variables of another run's
// checkpoint over a new run's initial values.
#include "estimator/warm_start.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "engine/base/did_you_mean.hpp"
#include "config_schema/semantic.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {
namespace {

namespace fs = std::filesystem;

Result<std::string> resolve_checkpoint(const WarmStartSpec& spec) {
  std::error_code ec;
  if (fs::is_directory(spec.from, ec)) {
    if (auto latest = latest_checkpoint(spec.from)) return *latest;
    return config_error(fmt::format("{}: run.warm_start.from: directory {} has no checkpoint "
                                    "(model.ckpt-*.safetensors); train that run first or name a checkpoint file",
                                    spec.from_where, spec.from));
  }
  if (fs::is_regular_file(spec.from, ec)) return spec.from;
  return config_error(fmt::format("{}: run.warm_start.from: {} does not exist; expected a checkpoint file "
                                  "(model.ckpt-N.safetensors) or a model_dir with checkpoints",
                                  spec.from_where, spec.from));
}

// "a, b, c, ... (N in all)" for error messages.
std::string some_names(const std::vector<std::string>& names) {
  constexpr size_t kShown = 6;
  if (names.size() <= kShown) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{}, ... ({} in all)", fmt::join(names.begin(), names.begin() + kShown, ", "), names.size());
}

}  // namespace

Result<WarmStart> make_warm_start(const WarmStartSpec& spec, const Program& program) {
  // The job's validation checked it (semantic_checks); a spec made otherwise gets the same error.
  if (auto problem = regex_problem(spec.vars)) {
    return config_error(fmt::format("{}: run.warm_start.vars: \"{}\" is not a valid ECMAScript regular expression: {}",
                                    spec.vars_where, spec.vars, *problem));
  }
  const std::regex select(spec.vars, std::regex::ECMAScript);
  const auto& vars = program.model->variables();
  std::vector<std::string> names;
  std::vector<bool> selected;
  for (const VariableSpec& v : vars) {
    names.push_back(v.name);
    selected.push_back(std::regex_match(v.name, select));
  }
  if (std::find(selected.begin(), selected.end(), true) == selected.end()) {
    return config_error(fmt::format("{}: run.warm_start.vars: \"{}\" selects none of the model's variables ({}); "
                                    "it must match a whole name",
                                    spec.vars_where, spec.vars, some_names(names)));
  }
  std::map<std::string, std::pair<std::string, size_t>> rename;  // new name -> (checkpoint name, entry)
  for (size_t k = 0; k < spec.rename.size(); ++k) {
    const auto& [to, from] = spec.rename[k];
    const auto it = std::find(names.begin(), names.end(), to);
    if (it == names.end()) {
      return config_error(fmt::format("{}: run.warm_start.rename: \"{}\" is not a variable of the model{}",
                                      spec.rename_where[k].first, to, did_you_mean(to, names)));
    }
    if (!selected[static_cast<size_t>(it - names.begin())]) {
      return config_error(fmt::format("{}: run.warm_start.rename: \"{}\" is not selected by run.warm_start.vars "
                                      "\"{}\"; widen vars or drop the rename",
                                      spec.rename_where[k].first, to, spec.vars));
    }
    rename[to] = {from, k};
  }

  auto path = resolve_checkpoint(spec);
  if (!path) return path.error();
  auto ckpt = load_checkpoint(*path);
  if (!ckpt) return ckpt.error();
  std::vector<std::string> ckpt_names;
  for (const auto& [name, t] : ckpt->tensors) ckpt_names.push_back(name);

  WarmStart out;
  out.checkpoint = *path;
  std::vector<Tensor> values;
  std::vector<std::vector<Tensor>> slots;
  if (Status s = initialize_variables(program, kHost, values, slots); !s) return s.error();
  const auto slot_names = program.optimizer->slot_names();
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string& name = vars[i].name;
    if (!selected[i]) {
      out.not_filled.push_back(fmt::format("{} {} (not selected by vars)", name, shape_str(vars[i].shape)));
      continue;
    }
    const auto ren = rename.find(name);
    const std::string& source = ren == rename.end() ? name : ren->second.first;
    const Tensor* t = ckpt->find(source);
    if (t == nullptr && ren != rename.end()) {
      return config_error(fmt::format("{}: run.warm_start.rename.{}: \"{}\" is not in the checkpoint {}{}",
                                      spec.rename_where[ren->second.second].second, name, source, *path,
                                      did_you_mean(source, ckpt_names)));
    }
    if (t == nullptr) {
      out.not_filled.push_back(fmt::format("{} {} (not in the checkpoint)", name, shape_str(vars[i].shape)));
      continue;
    }
    if (t->shape() != vars[i].shape) {
      return config_error(fmt::format("{}: run.warm_start: the model's {} has shape {} but the checkpoint's {} has "
                                      "shape {} ({}); leave it out of run.warm_start.vars, or rename it",
                                      spec.where, name, shape_str(vars[i].shape), source, shape_str(t->shape()),
                                      *path));
    }
    values[i].copy_from(*t);
    out.copied.push_back(source == name ? name : fmt::format("{} <- {}", name, source));
    if (!spec.slots) continue;
    for (size_t k = 0; k < slots[i].size(); ++k) {
      const Tensor* s = ckpt->find(source + "/" + slot_names[k]);
      if (s != nullptr && s->shape() == vars[i].shape) {
        slots[i][k].copy_from(*s);
      } else {
        out.fresh_slots.push_back(name + "/" + slot_names[k]);
      }
    }
  }
  out.state.global_step = 0;
  out.state.tensors = state_list(program, values, slots);
  return out;
}

}  // namespace dtrain
