// ReadAheadReader: one thread per open file fills a byte-bounded queue.
#include "datasets/read_ahead.hpp"

#include <utility>

#include "engine/thread_errors.hpp"

namespace dtrain {

ReadAheadReader::ReadAheadReader(std::unique_ptr<TfRecordReader> reader, bool skip_corrupt)
    : reader_(std::move(reader)),
      skip_corrupt_(skip_corrupt),
      offset_(reader_->offset()),
      index_(reader_->index()),
      thread_([this] { run(); }) {}

ReadAheadReader::~ReadAheadReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ReadAheadReader::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stop_ || queue_.empty() || queued_bytes_ < kQueueBytes; });
      if (stop_) return;
    }
    Entry e;
    Result<bool> got = false;
    try {
      maybe_throw_for_test("read_ahead");
      got = reader_->next(e.data, e.offset, e.index, skip_corrupt_, &e.skipped);
    } catch (...) {
      got = current_exception_error("input pipeline: reading records");
    }
    e.next_offset = reader_->offset();
    e.next_index = reader_->index();
    if (!got) {
      e.end = true;
      e.error = got.error();
    } else if (!*got) {
      e.end = true;
    }
    const bool last = e.end;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_bytes_ += static_cast<int64_t>(e.data.size());
      queue_.push_back(std::move(e));
    }
    changed_.notify_all();
    if (last) return;
  }
}

Result<bool> ReadAheadReader::next(std::string& data, int64_t& offset, int64_t& index,
                                   std::vector<std::string>* skipped) {
  if (!done_) {
    Entry e;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return !queue_.empty(); });
      e = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= static_cast<int64_t>(e.data.size());
    }
    changed_.notify_all();
    if (skipped != nullptr) skipped->insert(skipped->end(), e.skipped.begin(), e.skipped.end());
    offset_ = e.next_offset;
    index_ = e.next_index;
    if (!e.end) {
      data = std::move(e.data);
      offset = e.offset;
      index = e.index;
      return true;
    }
    done_ = true;
    last_ = std::move(e);
  }
  if (!last_.error) return last_.error.error();
  return false;
}

}  // namespace dtrain
