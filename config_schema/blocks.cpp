// Block expansion on the job tree (see blocks.hpp).
#include "config_schema/blocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "engine/base/did_you_mean.hpp"
#include "config_schema/keras_names.hpp"

namespace dtrain {

namespace {

constexpr const char* kRequired = "required";

struct Param {
  std::string name;
  const Node* default_value = nullptr;  // null: required
};

struct Block {
  std::string name;
  const Node* def = nullptr;
  std::vector<Param> params;
  const Node* layers = nullptr;
};

bool is_param_ref(const Node& n) { return n.is_scalar() && !n.quoted && n.text.size() > 1 && n.text[0] == '$'; }

std::string scalar_or_describe(const Node& n) { return n.is_scalar() ? n.text : describe_value(n); }

class Expander {
 public:
  Expander(Node& model, std::vector<std::string> input_names) : model_(model), input_names_(std::move(input_names)) {}

  BlockExpansion run();

 private:
  void issue(const Node& at, std::string path, std::string msg) {
    if (!reported_.insert(at.loc.str() + "|" + msg).second) return;  // a copy's echo of a reported problem
    out_.issues.push_back({at.loc, std::move(path), std::move(msg)});
  }
  void read_blocks(const Node& blocks);
  void check_no_params(Node& n, const std::string& path);
  std::string name_of(const Node& layer) const;
  void expand_use(const Node& use, size_t index, std::string& prev);
  // Replaces $refs under `n` by the copy's values; reports unknown ones once.
  void substitute(Node& n, const std::map<std::string, const Node*>& values, const Block& b, const std::string& path);

  Node& model_;
  std::vector<std::string> input_names_;  // the model's inputs; the first is the default input
  std::map<std::string, Block> blocks_;
  std::vector<Node> layers_out_;
  std::map<std::string, std::string> alias_;  // block-use name -> its output layer
  std::set<std::string> reported_;            // "<loc>|<message>" already given
  std::set<std::string> above_;               // names usable so far: the input, emitted layers, block uses
  std::set<std::string> everywhere_;          // every top-level and block-use name in the file
  BlockExpansion out_;
};

void Expander::read_blocks(const Node& blocks) {
  if (!blocks.is_mapping()) {
    issue(blocks, "model.blocks", fmt::format("expected a mapping of block name to {{params, layers}}; got {}",
                                              describe_value(blocks)));
    return;
  }
  for (const auto& [key, def] : blocks.entries) {
    const std::string path = child_path("model.blocks", key.text);
    Block b;
    b.name = key.text;
    b.def = &def;
    if (!def.is_mapping()) {
      issue(def, path, fmt::format("expected a mapping with params and layers; got {}", describe_value(def)));
      continue;
    }
    for (const auto& [k, v] : def.entries) {
      if (k.text != "params" && k.text != "layers") {
        issue(k, child_path(path, k.text),
              fmt::format("unknown key; expected params or layers{}", did_you_mean(k.text, {"params", "layers"})));
      }
    }
    if (const Node* params = def.find("params")) {
      if (!params->is_mapping()) {
        issue(*params, child_path(path, "params"),
              fmt::format("expected a mapping of parameter name to its default (or required); got {}",
                          describe_value(*params)));
      } else {
        for (const auto& [k, v] : params->entries) {
          const bool required = v.is_scalar() && !v.quoted && v.text == kRequired;
          b.params.push_back({k.text, required ? nullptr : &v});
        }
      }
    }
    b.layers = def.find("layers");
    if (b.layers == nullptr || !b.layers->is_sequence() || b.layers->items.empty()) {
      issue(b.layers != nullptr ? *b.layers : def, child_path(path, "layers"),
            "expected a non-empty list of layers (the block's input is `in`, its output its last layer)");
      b.layers = nullptr;
    } else {
      for (size_t i = 0; i < b.layers->items.size(); ++i) {
        const Node& l = b.layers->items[i];
        const std::string lp = index_path(child_path(path, "layers"), i);
        if (!l.is_mapping()) continue;  // validation reports it on the copies
        if (const Node* inner = l.find("block")) {
          issue(*inner, child_path(lp, "block"),
                inner->text == b.name ? fmt::format("block \"{}\" uses itself; blocks cannot be recursive", b.name)
                                      : std::string("a block cannot use another block; write its layers here"));
        }
        const Node* name = l.find("name");
        if (name == nullptr || !name->is_scalar() || name->text.empty()) {
          issue(l, lp, "a layer in a block needs a name (its copies are named <use>_block<k>_<name>)");
        } else if (name->text == "in") {
          issue(*name, child_path(lp, "name"), "\"in\" is the block's input; choose another name");
        }
        if (const Node* when = l.find("when")) {
          if (const Node* inputs = l.find("inputs"); inputs != nullptr && inputs->is_sequence() && inputs->items.size() > 1) {
            issue(*when, child_path(lp, "when"),
                  "when: can only drop a layer of one input (its name then means its input); this layer has " +
                      std::to_string(inputs->items.size()));
          }
        }
        // $refs to parameters the block does not declare.
        std::vector<std::string> names;
        for (const Param& p : b.params) names.push_back(p.name);
        std::vector<std::pair<const Node*, std::string>> stack{{&l, lp}};
        while (!stack.empty()) {
          auto [n, np] = stack.back();
          stack.pop_back();
          if (is_param_ref(*n)) {
            const std::string ref = n->text.substr(1);
            if (std::find(names.begin(), names.end(), ref) == names.end()) {
              issue(*n, np,
                    fmt::format("unknown block parameter ${}; block {} declares {}{}", ref, b.name,
                                names.empty() ? "no params" : "params: " + join_names(names), did_you_mean(ref, names)));
            }
          }
          for (const auto& [k, v] : n->entries) stack.push_back({&v, child_path(np, k.text)});
          for (size_t j = 0; j < n->items.size(); ++j) stack.push_back({&n->items[j], index_path(np, j)});
        }
      }
    }
    blocks_[b.name] = std::move(b);
  }
}

void Expander::check_no_params(Node& n, const std::string& path) {
  if (is_param_ref(n)) {
    issue(n, path, fmt::format("{} is a block parameter, but this layer is not in a block (write the value, or "
                               "quote it for a string starting with $)", n.text));
    n.flagged = true;
  }
  for (auto& [k, v] : n.entries) {
    if (k.text == "when" && path.rfind("model.layers", 0) == 0) {
      issue(k, child_path(path, "when"), "when: is for layers inside a block (model.blocks.NAME.layers)");
    }
    check_no_params(v, child_path(path, k.text));
  }
  for (size_t i = 0; i < n.items.size(); ++i) check_no_params(n.items[i], index_path(path, i));
}

std::string Expander::name_of(const Node& layer) const {
  const Node* n = layer.find("name");
  return n != nullptr && n->is_scalar() ? n->text : "";
}

void Expander::substitute(Node& n, const std::map<std::string, const Node*>& values, const Block& b,
                          const std::string& path) {
  if (is_param_ref(n)) {
    auto it = values.find(n.text.substr(1));
    if (it != values.end() && it->second != nullptr) {
      n = *it->second;
    } else {
      n.flagged = true;  // reported with the block; validation need not add "got $x"
    }
    return;
  }
  (void)b;
  for (auto& [k, v] : n.entries) substitute(v, values, b, child_path(path, k.text));
  for (size_t i = 0; i < n.items.size(); ++i) substitute(n.items[i], values, b, index_path(path, i));
}

void Expander::expand_use(const Node& use, size_t index, std::string& prev) {
  const std::string path = index_path("model.layers", index);
  static const std::vector<std::string> kUseKeys{"name", "block", "repeat", "params", "first", "inputs"};
  for (const auto& [k, v] : use.entries) {
    if (std::find(kUseKeys.begin(), kUseKeys.end(), k.text) == kUseKeys.end()) {
      issue(k, child_path(path, k.text),
            fmt::format("unknown key of a block use; expected one of {}{}", join_names(kUseKeys),
                        did_you_mean(k.text, kUseKeys)));
    }
  }
  const Node* block_key = use.find("block");
  if (!block_key->is_scalar()) {
    issue(*block_key, child_path(path, "block"),
          fmt::format("expected the name of a block of model.blocks; got {}", describe_value(*block_key)));
    return;
  }
  auto it = blocks_.find(block_key->text);
  if (it == blocks_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, b] : blocks_) names.push_back(n);
    issue(*block_key, child_path(path, "block"),
          fmt::format("unknown block \"{}\"; {}{}", block_key->text,
                      names.empty() ? "model.blocks defines none" : "defined: " + join_names(names),
                      did_you_mean(block_key->text, names)));
    return;
  }
  const Block& b = it->second;
  const std::string use_name = name_of(use);
  if (use_name.empty()) {
    const Node* name = use.find("name");
    if (name != nullptr && !name->is_scalar()) {
      issue(*name, child_path(path, "name"), fmt::format("expected a name; got {}", describe_value(*name)));
    } else {
      issue(use, path, "a block use needs a name (its copies are named <name>_block1_..., like Keras applications)");
    }
    return;
  }
  int64_t repeat = 1;
  if (const Node* r = use.find("repeat")) {
    // At most kMaxRepeat copies: a deep ResNet repeats a block a few dozen times.
    constexpr int64_t kMaxRepeat = 1000;
    if (value_type(*r) != ValueType::kInteger || as_int(*r) < 1 || as_int(*r) > kMaxRepeat) {
      issue(*r, child_path(path, "repeat"),
            fmt::format("expected an integer from 1 to {}; got {}", kMaxRepeat, describe_value(*r)));
      return;
    }
    repeat = as_int(*r);
  }
  std::vector<std::string> declared;
  for (const Param& p : b.params) declared.push_back(p.name);
  auto read_values = [&](const char* key, std::map<std::string, const Node*>& into) {
    const Node* m = use.find(key);
    if (m == nullptr || value_type(*m) == ValueType::kNull) return true;
    if (!m->is_mapping()) {
      issue(*m, child_path(path, key), fmt::format("expected a mapping of block parameter to value; got {}",
                                                   describe_value(*m)));
      return false;
    }
    bool ok = true;
    for (const auto& [k, v] : m->entries) {
      if (std::find(declared.begin(), declared.end(), k.text) == declared.end()) {
        issue(k, child_path(child_path(path, key), k.text),
              fmt::format("unknown parameter of block {}; {}{}", b.name,
                          declared.empty() ? "it declares none" : "it declares " + join_names(declared),
                          did_you_mean(k.text, declared)));
        ok = false;
      } else {
        into[k.text] = &v;
      }
    }
    return ok;
  };
  std::map<std::string, const Node*> base;
  for (const Param& p : b.params) base[p.name] = p.default_value;
  std::map<std::string, const Node*> first = base;
  bool ok = read_values("params", base);
  first = base;
  ok = read_values("first", first) && ok;
  for (const Param& p : b.params) {
    if (base[p.name] == nullptr && first[p.name] == nullptr) {
      issue(use, child_path(path, "params"),
            fmt::format("block {} needs parameter {} (declared required)", b.name, p.name));
      ok = false;
    } else if (base[p.name] == nullptr && repeat > 1) {
      issue(use, child_path(path, "params"),
            fmt::format("block {} needs parameter {} for copies 2..{} (first: gives it to the first copy only)",
                        b.name, p.name, repeat));
      ok = false;
    }
  }
  if (!ok || b.layers == nullptr) return;

  std::string in = prev;
  if (const Node* inputs = use.find("inputs")) {
    const Node* one = inputs->is_sequence() && inputs->items.size() == 1 ? &inputs->items[0] : inputs;
    if (!one->is_scalar()) {
      issue(*inputs, child_path(path, "inputs"), "a block has one input (`in`): give one layer name");
      return;
    }
    in = alias_.count(one->text) != 0 ? alias_[one->text] : one->text;
  }
  for (int64_t c = 1; c <= repeat; ++c) {
    const auto& values = c == 1 ? first : base;
    const std::string copy = fmt::format("{}_block{}", use_name, c);
    std::string note = fmt::format("in {} (block {}", copy, b.name);
    for (size_t p = 0; p < b.params.size(); ++p) {
      note += fmt::format("{}{}={}", p == 0 ? ", " : ", ", b.params[p].name,
                          scalar_or_describe(*values.at(b.params[p].name)));
    }
    note += ")";
    std::map<std::string, std::string> local{{"in", in}};
    std::string last = in;
    for (size_t i = 0; i < b.layers->items.size(); ++i) {
      const std::string lp = index_path(child_path(child_path("model.blocks", b.name), "layers"), i);
      Node layer = b.layers->items[i];
      if (layer.is_mapping() && layer.find("block") != nullptr) continue;  // reported with the block
      if (!layer.is_mapping()) {
        layers_out_.push_back(std::move(layer));
        out_.origins.push_back({lp, note});
        continue;
      }
      substitute(layer, values, b, lp);
      const std::string local_name = name_of(layer);
      // Inputs: local names become the copy's, block-use names their outputs.
      Node* inputs = layer.find("inputs");
      std::optional<std::string> single_input;
      if (inputs != nullptr && value_type(*inputs) != ValueType::kNull) {
        auto rename = [&](Node& n, const std::string& ipath) {
          if (!n.is_scalar()) return;
          if (auto l = local.find(n.text); l != local.end()) {
            n.text = l->second;
          } else if (auto a = alias_.find(n.text); a != alias_.end()) {
            n.text = a->second;
          } else if (above_.count(n.text) == 0) {
            std::vector<std::string> names;
            for (const auto& [k, v] : local) names.push_back(k);
            issue(n, ipath,
                  fmt::format("unknown layer \"{}\"; a layer in block {} reads `in`, a layer of the block above "
                              "it, or a layer above the block's use{}",
                              n.text, b.name, did_you_mean(n.text, names)));
            n.flagged = true;
          }
        };
        if (inputs->is_sequence()) {
          for (size_t j = 0; j < inputs->items.size(); ++j) rename(inputs->items[j], index_path(child_path(lp, "inputs"), j));
          if (inputs->items.size() == 1 && inputs->items[0].is_scalar()) single_input = inputs->items[0].text;
        } else {
          rename(*inputs, child_path(lp, "inputs"));
          single_input = inputs->text;
        }
      } else {
        single_input = last;
        Node value = Node::scalar(last, layer.loc);
        if (inputs != nullptr) {
          *inputs = value;
        } else {
          layer.entries.emplace_back(Node::scalar("inputs", layer.loc), value);
        }
      }
      // when: false drops the layer; its name then means its input.
      bool keep = true;
      for (auto e = layer.entries.begin(); e != layer.entries.end(); ++e) {
        if (e->first.text != "when") continue;
        if (value_type(e->second) != ValueType::kBool) {
          issue(e->second, child_path(lp, "when"),
                fmt::format("expected true or false (usually a block parameter, when: $flag); got {}",
                            describe_value(e->second)));
        } else {
          keep = as_bool(e->second);
        }
        layer.entries.erase(e);
        break;
      }
      if (!keep) {
        if (single_input) {
          local[local_name] = *single_input;
          last = *single_input;
        }
        continue;
      }
      const std::string full = copy + "_" + local_name;
      if (Node* n = layer.find("name")) n->text = full;
      local[local_name] = full;
      above_.insert(full);
      last = full;
      layers_out_.push_back(std::move(layer));
      out_.origins.push_back({lp, note});
    }
    in = last;
  }
  alias_[use_name] = in;
  above_.insert(use_name);
  prev = in;
}

BlockExpansion Expander::run() {
  Node* layers = model_.find("layers");
  const Node* blocks = model_.find("blocks");
  if (layers == nullptr || !layers->is_sequence()) return std::move(out_);
  bool any_use = false;
  for (const Node& l : layers->items) any_use = any_use || (l.is_mapping() && l.find("block") != nullptr);
  if (blocks == nullptr && !any_use) {
    for (size_t i = 0; i < layers->items.size(); ++i) check_no_params(layers->items[i], index_path("model.layers", i));
    return std::move(out_);
  }
  if (blocks != nullptr) read_blocks(*blocks);

  // Unnamed layers are named here as the loader would (Keras naming by type)
  // so that a block used right after one can name its input.
  std::set<std::string> taken;
  for (const Node& l : layers->items) {
    if (l.is_mapping() && !name_of(l).empty()) taken.insert(name_of(l));
  }
  KerasNamer namer(std::move(taken));
  for (Node& l : layers->items) {
    if (!l.is_mapping() || l.find("block") != nullptr || !name_of(l).empty()) continue;
    const Node* type = l.find("type");
    if (type == nullptr || !type->is_scalar() || type->text.empty()) continue;
    const std::string name = namer.next(type->text);
    if (Node* existing = l.find("name")) {
      existing->text = name;
    } else {
      l.entries.emplace_back(Node::scalar("name", l.loc), Node::scalar(name, l.loc));
    }
  }

  std::string prev = input_names_.front();
  above_.insert(input_names_.begin(), input_names_.end());
  for (const Node& l : layers->items) {
    if (l.is_mapping() && !name_of(l).empty()) everywhere_.insert(name_of(l));
  }
  bool after_block = false;
  for (size_t i = 0; i < layers->items.size(); ++i) {
    Node& l = layers->items[i];
    const std::string path = index_path("model.layers", i);
    if (l.is_mapping() && l.find("block") != nullptr) {
      expand_use(l, i, prev);
      after_block = true;
      continue;
    }
    check_no_params(l, path);
    Node layer = l;
    if (layer.is_mapping()) {
      Node* inputs = layer.find("inputs");
      if (inputs != nullptr && value_type(*inputs) != ValueType::kNull) {
        auto rename = [&](Node& n, const std::string& ipath) {
          if (!n.is_scalar()) return;
          if (auto a = alias_.find(n.text); a != alias_.end()) {
            n.text = a->second;
          } else if (above_.count(n.text) == 0 && everywhere_.count(n.text) == 0) {
            // (A name further down is the graph's to report: "defined below".)
            std::vector<std::string> names(above_.begin(), above_.end());
            issue(n, ipath, fmt::format("unknown layer \"{}\"{}", n.text, did_you_mean(n.text, names)));
            n.flagged = true;
          }
        };
        if (inputs->is_sequence()) {
          for (size_t j = 0; j < inputs->items.size(); ++j) rename(inputs->items[j], index_path(child_path(path, "inputs"), j));
        } else {
          rename(*inputs, child_path(path, "inputs"));
        }
      } else if (after_block) {
        // "The layer above" is the block's output, not its last copied layer
        // (which when: may have dropped).
        Node value = Node::scalar(prev, layer.loc);
        if (inputs != nullptr) *inputs = value;
        else layer.entries.emplace_back(Node::scalar("inputs", layer.loc), value);
      }
      prev = name_of(layer);
      above_.insert(prev);
    }
    after_block = false;
    layers_out_.push_back(std::move(layer));
    out_.origins.push_back({path, ""});
  }
  layers->items = std::move(layers_out_);
  // A use that could not be expanded was reported; an empty list is its echo.
  if (layers->items.empty() && !out_.issues.empty()) layers->flagged = true;
  auto& entries = model_.entries;
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](const auto& e) { return e.first.text == "blocks"; }),
                entries.end());
  return std::move(out_);
}

}  // namespace

BlockExpansion expand_blocks(Node& root, const std::vector<std::string>& input_names) {
  Node* model = root.find("model");
  if (model == nullptr || !model->is_mapping()) return {};
  return Expander(*model, input_names.empty() ? std::vector<std::string>{"input"} : input_names).run();
}

std::vector<Issue> map_to_origins(std::vector<Issue> issues, const std::vector<LayerOrigin>& origins) {
  if (origins.empty()) return issues;
  std::vector<Issue> out;
  std::set<std::string> seen;
  const std::string prefix = "model.layers[";
  for (Issue& issue : issues) {
    std::string note;
    if (issue.path.rfind(prefix, 0) == 0) {
      const size_t close = issue.path.find(']', prefix.size());
      if (close != std::string::npos) {
        const size_t index = std::stoul(issue.path.substr(prefix.size(), close - prefix.size()));
        if (index < origins.size()) {
          note = origins[index].note;
          issue.path = origins[index].path + issue.path.substr(close + 1);
        }
      }
    }
    // "model.layers[N]" inside the message names an expanded layer too.
    for (size_t at = issue.message.find(prefix); at != std::string::npos; at = issue.message.find(prefix, at + 1)) {
      const size_t close = issue.message.find(']', at + prefix.size());
      if (close == std::string::npos) break;
      const std::string digits = issue.message.substr(at + prefix.size(), close - at - prefix.size());
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      const size_t index = std::stoul(digits);
      if (index >= origins.size()) continue;
      issue.message.replace(at, close + 1 - at, origins[index].path);
    }
    const std::string key = issue.where.str() + "|" + issue.path + "|" + issue.message;
    if (!seen.insert(key).second) continue;
    if (!note.empty()) issue.message += "\n  note: " + note;
    out.push_back(std::move(issue));
  }
  return out;
}

}  // namespace dtrain
