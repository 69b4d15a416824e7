// The buffer plan of a model (Model::plan_buffers): which activations a
// backward reads, and after which layer's forward each of the others has no
// reader left; and Model::memory_plan, which replays forward and backward
// over that plan with the pool's rules (engine/model/buffer_pool.hpp) to give
// the bytes they hold, layer by layer.
#include <algorithm>

#include <fmt/format.h>

#include "engine/model/model.hpp"

namespace dtrain {

void Model::plan_buffers() {
  const size_t n = layers_.size();
  std::vector<int> last_reader(n, -1);
  roles_.assign(n, BufferRole{});
  for (size_t i = 0; i < n; ++i) {
    roles_[i].view = layers_[i].layer->ops().empty();
    roles_[i].keep = layers_[i].layer->backward_reads_output();
  }
  for (const ModelOutput& o : outputs_) roles_[o.entry].output = true;
  for (size_t k = 0; k < n; ++k) {
    const Entry& e = layers_[k];
    for (int in : e.inputs) {
      if (is_model_input(in)) continue;
      BufferRole& src = roles_[static_cast<size_t>(in)];
      src.keep = src.keep || e.layer->backward_reads_inputs();
      last_reader[static_cast<size_t>(in)] = static_cast<int>(k);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const BufferRole& r = roles_[i];
    if (r.output || r.keep || last_reader[i] < 0) continue;
    roles_[static_cast<size_t>(last_reader[i])].free_after_forward.push_back(i);
  }
}

namespace {

// The pool's rules over buffer ids: a slot holds an id or -1; a view shares
// its source's id; an id goes back to the free list when its last slot lets go.
struct PoolReplay {
  std::vector<size_t> bytes;
  std::vector<int> refs;
  std::vector<int> free;
  size_t made = 0, live = 0;

  int take(size_t b) {
    for (size_t i = free.size(); i-- > 0;) {
      const int id = free[i];
      if (bytes[static_cast<size_t>(id)] == b) {
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(i));
        refs[static_cast<size_t>(id)] = 1;
        live += b;
        return id;
      }
    }
    bytes.push_back(b);
    refs.push_back(1);
    made += b;
    live += b;
    return static_cast<int>(bytes.size() - 1);
  }
  int share(int id) {
    if (id >= 0) ++refs[static_cast<size_t>(id)];
    return id;
  }
  void give(int& slot) {
    if (slot < 0) return;
    if (--refs[static_cast<size_t>(slot)] == 0) {
      free.push_back(slot);
      live -= bytes[static_cast<size_t>(slot)];
    }
    slot = -1;
  }
};

}  // namespace

Model::MemoryPlan Model::memory_plan(int64_t batch) const {
  const size_t n = layers_.size();
  auto bytes_of = [&](int in) { return static_cast<size_t>(batch * num_elements(shape_of(in))) * sizeof(float); };
  MemoryPlan plan;
  plan.layers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    plan.layers[i].kept = roles_[i].keep || roles_[i].output;
    plan.without_plan += bytes_of(static_cast<int>(i)) * (i + 1 == n ? 1 : 2);  // the last layer's dy is the loss's
  }
  PoolReplay pool;
  std::vector<int> act(n, -1), grad(n, -1);
  auto note = [&](size_t layer, bool backward) {
    (backward ? plan.layers[layer].backward_live : plan.layers[layer].forward_live) = pool.live;
    if (pool.live > plan.peak_live) {
      plan.peak_live = pool.live;
      plan.peak_layer = layer;
      plan.peak_in_backward = backward;
    }
  };
  // Two steps: the second starts with the model outputs' buffers of the first.
  for (int step = 0; step < 2; ++step) {
    if (step == 1) plan.peak_live = 0;
    for (size_t i = 0; i < n; ++i) {
      const Entry& e = layers_[i];
      const BufferRole& r = roles_[i];
      if (r.view) {
        act[i] = is_model_input(e.inputs[0]) ? -1 : pool.share(act[static_cast<size_t>(e.inputs[0])]);
      } else if (act[i] < 0) {
        act[i] = pool.take(bytes_of(static_cast<int>(i)));
      }
      for (size_t src : r.free_after_forward) pool.give(act[src]);
      note(i, false);
    }
    std::vector<char> written(n, 0);
    for (const ModelOutput& o : outputs_) {
      if (o.entry + 1 == n) continue;
      grad[o.entry] = pool.take(bytes_of(static_cast<int>(o.entry)));
      written[o.entry] = 1;
    }
    for (size_t k = n; k-- > 0;) {
      const Entry& e = layers_[k];
      const BufferRole& r = roles_[k];
      std::vector<int> extra;
      for (int src : e.inputs) {
        if (is_model_input(src)) continue;
        const auto s = static_cast<size_t>(src);
        if (!written[s]) {
          written[s] = 1;
          grad[s] = r.view ? pool.share(grad[k]) : pool.take(bytes_of(src));
        } else {
          extra.push_back(pool.take(bytes_of(src)));
        }
      }
      for (int& x : extra) pool.give(x);
      pool.give(grad[k]);
      if (!r.output) pool.give(act[k]);
      note(k, true);
    }
  }
  plan.pool_bytes = pool.made;
  return plan;
}

std::string Model::memory_summary(int64_t batch) const {
  const MemoryPlan plan = memory_plan(batch);
  auto mib = [](size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  size_t width = 5;
  for (const Entry& e : layers_) width = std::max(width, e.name.size());
  std::string out = fmt::format("\nactivation memory of one replica at {} rows (MiB live after each layer's pass):\n"
                                "{:<{}}  {:>8}  {:>8}  {}\n",
                                batch, "layer", width, "forward", "backward", "activation");
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Entry& e = layers_[i];
    const BufferRole& r = roles_[i];
    const char* what = r.view     ? "a view of its input"
                       : r.output ? "kept: a model output"
                       : r.keep   ? "kept for backward"
                                  : "freed after its last reader's forward";
    out += fmt::format("{:<{}}  {:>8.1f}  {:>8.1f}  {}\n", e.name, width, mib(plan.layers[i].forward_live),
                       mib(plan.layers[i].backward_live), what);
  }
  out += fmt::format("planned peak {:.1f} MiB (after the {} of {}), pool {:.1f} MiB; a buffer per activation and "
                     "gradient would be {:.1f} MiB\n",
                     mib(plan.peak_live), plan.peak_in_backward ? "backward" : "forward",
                     layers_.empty() ? std::string("-") : layers_[plan.peak_layer].name, mib(plan.pool_bytes),
                     mib(plan.without_plan));
  return out;
}

}  // namespace dtrain
