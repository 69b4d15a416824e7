// SentencePiece subword models (Debian's libsentencepiece): a trained model
// read from its .model file, its pieces, and the encoding of text into
// pieces (tokenizer: sentencepiece of text_folder data and CSV text
// columns); and the training of a model from text files (`dtrain data
// sentencepiece`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"

struct DtrainSentencePieceModule;

namespace dtrain {

// Whether SentencePiece can be used: OK when its module
// (libdtrain_sentencepiece.so, datasets/sentencepiece_module.hpp) loads; a
// kConfig error saying why not (not found, where it looked; a sanitizer
// build, whose runtime refuses the RTLD_DEEPBIND the module needs). Loaded
// once per process; thread-safe.
Status sentencepiece_status();

// A loaded model. Immutable after construction; encode() may be called from
// any thread.
class SentencePieceModel {
 public:
  ~SentencePieceModel();

  // The model in `path` (a .model file, SentencePiece's serialized
  // ModelProto). A kData error names the path when it cannot be read or is
  // not a model.
  static Result<std::shared_ptr<const SentencePieceModel>> load(const std::string& path);
  // The model from its serialized bytes; `where` names them in errors.
  static Result<std::shared_ptr<const SentencePieceModel>> from_bytes(std::string bytes, const std::string& where);

  // The pieces of `text` (valid UTF-8), as the model normalizes and segments
  // it (e.g. "▁hello", "▁wor", "ld"); a piece the model does not know is
  // returned as "<unk>"'s text, the model's unknown piece.
  std::vector<std::string> encode(std::string_view text) const;

  // The model's pieces that encode() can return, in id order: its normal,
  // user-defined and byte pieces (not its unknown, control or unused ones).
  const std::vector<std::string>& pieces() const { return pieces_; }
  // Every id of the model, <unk> and the control pieces (<s>, </s>) included.
  int64_t size() const { return size_; }
  // The model file's bytes, to save beside a model.
  const std::string& bytes() const { return bytes_; }

 private:
  SentencePieceModel() = default;
  const DtrainSentencePieceModule* module_ = nullptr;
  void* processor_ = nullptr;  // the module's, released by the destructor
  std::vector<std::string> pieces_;
  std::string bytes_;
  int64_t size_ = 0;
};

using SentencePieceModelPtr = std::shared_ptr<const SentencePieceModel>;

// What `dtrain data sentencepiece` trains.
struct SentencePieceTraining {
  std::vector<std::string> files;  // UTF-8 text; each line one sentence
  int64_t vocab_size = 8000;       // pieces in all, <unk>, <s> and </s> included
  std::string model_type = "unigram";  // unigram | bpe | word | char
  double character_coverage = 1.0;  // the share of characters the model covers (0.9995 for CJK)
  // true: vocab_size is a cap (a smaller corpus gives fewer pieces);
  // false: fewer pieces than vocab_size is an error, as spm_train's default.
  bool vocab_size_is_cap = true;
  int threads = 1;
  uint64_t seed = 0;  // SentencePiece's sampling seed; 0 keeps its default
};

// What training found, for the command's report.
struct SentencePieceTrained {
  int64_t sentences = 0;  // lines read (empty lines skipped)
  int64_t pieces = 0;     // the model's size, <unk>, <s> and </s> included
};

// Trains a model on `t.files` and writes it to `out_path` (atomically: a
// temporary file, then rename). kConfig errors for bad options, kData errors
// naming a file that cannot be read or is not UTF-8, or SentencePiece's own
// message when training fails (e.g. a vocab_size larger than the text allows).
Result<SentencePieceTrained> train_sentencepiece(const SentencePieceTraining& t, const std::string& out_path);

}  // namespace dtrain
