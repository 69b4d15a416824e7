// RecordStream: interleaved readers feeding a tf.data-style shuffle buffer,
// its state written as JSON for checkpoints (StreamState::text()).
#include "datasets/record_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "engine/rng.hpp"

namespace dtrain {

namespace {

uint64_t hash_files(const std::vector<std::string>& files) {
  uint64_t h = hash64("dtrain.input.files");
  for (const std::string& f : files) h = hash64(f, h ^ 0x9e3779b97f4a7c15ull);
  return h;
}

// Draw t of epoch e for the stream `what` keyed by `seed`: Philox(counter =
// (t, e), key = hash of the seed), as IndexOrder::epoch_order draws.
uint64_t draw(const char* what, uint64_t seed, int64_t t, int64_t epoch) {
  const uint64_t key = hash64(what, seed);
  const auto u = static_cast<uint64_t>(t), e = static_cast<uint64_t>(epoch);
  const auto r = philox4x32({static_cast<uint32_t>(u), static_cast<uint32_t>(u >> 32), static_cast<uint32_t>(e),
                             static_cast<uint32_t>(e >> 32)},
                            {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  return uint64_t{r[0]} << 32 | r[1];
}

}  // namespace

std::string StreamState::text() const {
  nlohmann::json j{{"version", 1},        {"num_files", num_files}, {"files_hash", std::to_string(files_hash)},
                   {"epoch", epoch},      {"draws", draws},         {"next_file", next_file},
                   {"cycle", cycle},      {"taken", taken},         {"filled", filled},
                   {"ended", ended}};
  nlohmann::json s = nlohmann::json::array(), b = nlohmann::json::array();
  for (const Slot& slot : slots) s.push_back({slot.position, slot.offset, slot.index});
  for (const RecordRef& r : buffer) b.push_back({r.file, r.offset, r.index});
  j["slots"] = std::move(s);
  j["buffer"] = std::move(b);
  return j.dump();
}

RecordStream::RecordStream(StreamSpec spec) : spec_(std::move(spec)), files_hash_(hash_files(spec_.files)) {
  slots_.resize(static_cast<size_t>(spec_.cycle_length));
  cache_.resize(spec_.files.size());
  start_epoch(0);
}

std::vector<int32_t> RecordStream::file_order(const std::vector<int32_t>& use, uint64_t seed, int64_t epoch,
                                              bool shuffle) {
  std::vector<int32_t> order = use;
  if (!shuffle) return order;
  // Fisher-Yates from the back, draw k choosing among the first n - k files.
  for (size_t k = 0; k + 1 < order.size(); ++k) {
    const size_t n = order.size() - k;
    const size_t j = static_cast<size_t>(draw("dtrain.input.shuffle_files", seed, static_cast<int64_t>(k), epoch) % n);
    std::swap(order[n - 1], order[j]);
  }
  return order;
}

void RecordStream::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  draws_ = next_file_ = cycle_ = taken_ = open_ = 0;
  filled_ = false;
  order_ = file_order(spec_.use, spec_.seed, epoch, shuffling());
  for (Slot& s : slots_) s = Slot{};
  buffer_.clear();
  buffer_bytes_ = 0;
}

Result<std::unique_ptr<TfRecordReader>> RecordStream::open_file(int32_t file) const {
  return TfRecordReader::open(spec_.files[static_cast<size_t>(file)], spec_.compression);
}

Result<bool> RecordStream::pull(Buffered& out) {
  const auto n = static_cast<int64_t>(order_.size());
  auto advance = [this] {
    cycle_ = (cycle_ + 1) % static_cast<int64_t>(slots_.size());
    taken_ = 0;
  };
  while (next_file_ < n || open_ > 0) {
    Slot& slot = slots_[static_cast<size_t>(cycle_)];
    if (slot.cached && slot.cursor < slot.cached->refs.size()) {
      out.ref = slot.cached->refs[slot.cursor];
      out.data = slot.cached->data[slot.cursor++];
      if (++taken_ == spec_.block_length) advance();
      return true;
    }
    if (slot.reader) {
      auto got = slot.reader->next(out.data, out.ref.offset, out.ref.index, &skipped_);
      if (!got) return got.error();
      if (*got) {
        out.ref.file = order_[static_cast<size_t>(slot.position)];
        if (slot.filling) {
          if (Status s = check_cap(static_cast<int64_t>(out.data.size()), "cache: memory"); !s) return s.error();
          cache_bytes_ += static_cast<int64_t>(out.data.size());
          slot.filling->data.push_back(out.data);
          slot.filling->refs.push_back(out.ref);
        }
        if (++taken_ == spec_.block_length) advance();
        return true;
      }
      if (slot.filling) {
        slot.filling->end_offset = slot.reader->offset();
        slot.filling->end_index = slot.reader->index();
        cache_[static_cast<size_t>(order_[static_cast<size_t>(slot.position)])] = std::move(slot.filling);
      }
    }
    if (slot.open()) {  // its file is exhausted
      slot = Slot{};
      --open_;
      advance();
    } else if (next_file_ < n) {
      const int32_t file = order_[static_cast<size_t>(next_file_)];
      if (cache_[static_cast<size_t>(file)]) {
        slot.cached = cache_[static_cast<size_t>(file)];
        slot.cursor = 0;
      } else {
        auto reader = open_file(file);
        if (!reader) return reader.error();
        slot.reader = std::make_unique<ReadAheadReader>(std::move(reader.value()), spec_.skip_corrupt);
        if (spec_.cache) slot.filling = std::make_shared<CachedFile>();
      }
      slot.position = next_file_++;
      ++open_;
    } else {
      advance();
    }
  }
  return false;
}

Status RecordStream::check_cap(int64_t more, const char* what) const {
  if (spec_.max_buffer_bytes == 0 || buffer_bytes_ + cache_bytes_ + more <= spec_.max_buffer_bytes) return {};
  return config_error(fmt::format("{} ({} reached {:.1f} MiB: {} records in the shuffle buffer, {:.1f} MiB of cached "
                                  "records)",
                                  spec_.cap_message, what,
                                  static_cast<double>(buffer_bytes_ + cache_bytes_ + more) / (1 << 20),
                                  buffer_.size(), static_cast<double>(cache_bytes_) / (1 << 20)));
}

Status RecordStream::add_to_buffer(Buffered b) {
  const auto bytes = static_cast<int64_t>(b.data.size());
  if (spec_.max_buffer_bytes > 0 && buffer_bytes_ + cache_bytes_ + bytes > spec_.max_buffer_bytes) {
    if (spec_.cache) return check_cap(bytes, "the shuffle buffer");
    return config_error(fmt::format("{} (the shuffle buffer reached {:.1f} MiB with {} of its {} records)",
                                    spec_.cap_message, static_cast<double>(buffer_bytes_ + bytes) / (1 << 20),
                                    buffer_.size() + 1, spec_.shuffle_buffer));
  }
  buffer_bytes_ += bytes;
  buffer_.push_back(std::move(b));
  return {};
}

Result<bool> RecordStream::next(StreamRecord& out) {
  while (!ended_) {
    Buffered b;
    if (!shuffling()) {
      auto got = pull(b);
      if (!got) return got.error();
      if (*got) {
        ++draws_;
        out = StreamRecord{b.ref, epoch_, std::move(b.data)};
        return true;
      }
    } else {
      if (!filled_) {
        while (static_cast<int64_t>(buffer_.size()) < spec_.shuffle_buffer) {
          auto got = pull(b);
          if (!got) return got.error();
          if (!*got) break;
          if (Status s = add_to_buffer(std::move(b)); !s) return s.error();
        }
        filled_ = true;
      }
      if (!buffer_.empty()) {
        const auto slot = static_cast<size_t>(draw("dtrain.input.shuffle", spec_.seed, draws_++, epoch_) % buffer_.size());
        Buffered chosen = std::move(buffer_[slot]);
        buffer_bytes_ -= static_cast<int64_t>(chosen.data.size());
        auto got = pull(b);
        if (!got) return got.error();
        if (*got) {
          // The refill takes the drawn slot's place (the cap counts it there).
          buffer_[slot] = Buffered{};
          if (spec_.cache) {
            if (Status s = check_cap(static_cast<int64_t>(b.data.size()), "the shuffle buffer"); !s) return s.error();
          } else if (spec_.max_buffer_bytes > 0 &&
                     buffer_bytes_ + static_cast<int64_t>(b.data.size()) > spec_.max_buffer_bytes) {
            return config_error(fmt::format("{} (the shuffle buffer reached {:.1f} MiB with its {} records)",
                                            spec_.cap_message,
                                            static_cast<double>(buffer_bytes_ + static_cast<int64_t>(b.data.size())) / (1 << 20),
                                            buffer_.size()));
          }
          buffer_bytes_ += static_cast<int64_t>(b.data.size());
          buffer_[slot] = std::move(b);
        } else {
          buffer_[slot] = std::move(buffer_.back());
          buffer_.pop_back();
        }
        out = StreamRecord{chosen.ref, epoch_, std::move(chosen.data)};
        return true;
      }
    }
    // The epoch is over.
    if (!spec_.repeat) {
      ended_ = true;
      break;
    }
    start_epoch(epoch_ + 1);
  }
  return false;
}

std::shared_ptr<const StreamState> RecordStream::snapshot() const {
  auto s = std::make_shared<StreamState>();
  s->epoch = epoch_;
  s->draws = draws_;
  s->next_file = next_file_;
  s->cycle = cycle_;
  s->taken = taken_;
  s->filled = filled_;
  s->ended = ended_;
  s->files_hash = files_hash_;
  s->num_files = static_cast<int64_t>(spec_.files.size());
  for (const Slot& slot : slots_) {
    StreamState::Slot out;
    if (slot.reader) {
      out = {slot.position, slot.reader->offset(), slot.reader->index()};
    } else if (slot.cached) {
      const CachedFile& c = *slot.cached;
      out = slot.cursor < c.refs.size() ? StreamState::Slot{slot.position, c.refs[slot.cursor].offset, c.refs[slot.cursor].index}
                                        : StreamState::Slot{slot.position, c.end_offset, c.end_index};
    }
    s->slots.push_back(out);
  }
  s->buffer.reserve(buffer_.size());
  for (const Buffered& b : buffer_) s->buffer.push_back(b.ref);
  return s;
}

Status RecordStream::restore(const std::string& text) {
  const std::string what = "the input position saved in the checkpoint";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
    if (j.at("version").get<int>() != 1) return data_error(what + " has an unknown version");
    if (j.at("num_files").get<int64_t>() != static_cast<int64_t>(spec_.files.size()) ||
        j.at("files_hash").get<std::string>() != std::to_string(files_hash_)) {
      return data_error(fmt::format("{} is for {} other files than the {} files now matched; resume with the same "
                                    "files, or start a new model_dir",
                                    what, j.at("num_files").get<int64_t>(), spec_.files.size()));
    }
    start_epoch(j.at("epoch").get<int64_t>());
    draws_ = j.at("draws").get<int64_t>();
    next_file_ = j.at("next_file").get<int64_t>();
    cycle_ = j.at("cycle").get<int64_t>();
    taken_ = j.at("taken").get<int64_t>();
    filled_ = j.at("filled").get<bool>();
    ended_ = j.at("ended").get<bool>();
    const auto& slots = j.at("slots");
    if (slots.size() != slots_.size() || cycle_ < 0 || cycle_ >= static_cast<int64_t>(slots_.size()) ||
        next_file_ < 0 || next_file_ > static_cast<int64_t>(order_.size())) {
      return data_error(what + " is for other interleave settings or files; start a new model_dir");
    }
    for (size_t k = 0; k < slots.size(); ++k) {
      const int64_t position = slots[k].at(0).get<int64_t>();
      if (position < 0) continue;
      if (position >= next_file_) return data_error(what + " is malformed (slot file)");
      auto reader = open_file(order_[static_cast<size_t>(position)]);
      if (!reader) return reader.error();
      if (Status s = (*reader)->seek(slots[k].at(1).get<int64_t>(), slots[k].at(2).get<int64_t>()); !s) return s;
      slots_[k] = Slot{position, std::make_unique<ReadAheadReader>(std::move(reader.value()), spec_.skip_corrupt)};
      ++open_;
    }
    // The buffered records, read file by file in offset order.
    const auto& refs = j.at("buffer");
    buffer_.resize(refs.size());
    std::map<int32_t, std::vector<size_t>> by_file;
    for (size_t k = 0; k < refs.size(); ++k) {
      RecordRef r{refs[k].at(0).get<int32_t>(), refs[k].at(1).get<int64_t>(), refs[k].at(2).get<int64_t>()};
      if (r.file < 0 || r.file >= static_cast<int32_t>(spec_.files.size())) return data_error(what + " is malformed (file)");
      buffer_[k].ref = r;
      by_file[r.file].push_back(k);
    }
    for (auto& [file, ks] : by_file) {
      std::sort(ks.begin(), ks.end(), [this](size_t a, size_t b) { return buffer_[a].ref.offset < buffer_[b].ref.offset; });
      auto reader = open_file(file);
      if (!reader) return reader.error();
      for (size_t k : ks) {
        Buffered& b = buffer_[k];
        if (Status s = (*reader)->seek(b.ref.offset, b.ref.index); !s) return s;
        RecordRef got;
        auto ok = (*reader)->next(b.data, got.offset, got.index, false, nullptr);
        if (!ok) return ok.error();
        if (!*ok) return data_error(fmt::format("{}: no record {} at byte {}, named by {}",
                                                spec_.files[static_cast<size_t>(file)], b.ref.index, b.ref.offset, what));
        buffer_bytes_ += static_cast<int64_t>(b.data.size());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return data_error(what + " is malformed: " + e.what());
  }
  return {};
}

std::vector<std::string> RecordStream::take_skipped() { return std::exchange(skipped_, {}); }

}  // namespace dtrain
