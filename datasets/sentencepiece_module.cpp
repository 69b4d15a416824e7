// libdtrain_sentencepiece.so (datasets/sentencepiece_module.hpp): the table
// over libsentencepiece's processor and trainer. Links nothing of dtrain.
#include "datasets/sentencepiece_module.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

namespace {

using sentencepiece::SentencePieceProcessor;

void* load(const std::string* bytes, std::string* error) {
  auto* p = new SentencePieceProcessor();
  if (const auto s = p->LoadFromSerializedProto(*bytes); !s.ok()) {
    *error = s.ToString();
    delete p;
    return nullptr;
  }
  return p;
}

void release(void* processor) { delete static_cast<SentencePieceProcessor*>(processor); }

bool encode(const void* processor, const char* text, size_t size, std::vector<std::string>* pieces,
            std::string* error) {
  const auto s = static_cast<const SentencePieceProcessor*>(processor)->Encode(std::string_view(text, size), pieces);
  if (!s.ok()) *error = s.ToString();
  return s.ok();
}

int size(const void* processor) { return static_cast<const SentencePieceProcessor*>(processor)->GetPieceSize(); }

int piece(const void* processor, int id, std::string* text) {
  const auto* p = static_cast<const SentencePieceProcessor*>(processor);
  *text = p->IdToPiece(id);
  if (p->IsUnknown(id)) return kPieceUnknown;
  if (p->IsControl(id)) return kPieceControl;
  if (p->IsUnused(id)) return kPieceUnused;
  return kPieceNormal;
}

// The trainer's sentences, pulled from the caller one at a time.
class Sentences final : public sentencepiece::SentenceIterator {
 public:
  Sentences(bool (*next)(void*, std::string*), void* ctx) : next_(next), ctx_(ctx) { Next(); }
  bool done() const override { return done_; }
  void Next() override { done_ = !next_(ctx_, &line_); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  bool (*next_)(void*, std::string*);
  void* ctx_;
  std::string line_;
  bool done_ = false;
};

bool train(const std::vector<std::pair<std::string, std::string>>* args, bool (*next)(void*, std::string*), void* ctx,
           std::string* model, std::string* error) {
  const std::unordered_map<std::string, std::string> kwargs(args->begin(), args->end());
  Sentences sentences(next, ctx);
  const auto s = sentencepiece::SentencePieceTrainer::Train(kwargs, &sentences, model);
  if (!s.ok()) *error = s.message();
  return s.ok();
}

const DtrainSentencePieceModule kModule = {kDtrainSentencePieceAbi, &load, &release, &encode, &size, &piece, &train};

}  // namespace

extern "C" const DtrainSentencePieceModule* dtrain_sentencepiece_module(void) noexcept { return &kModule; }
