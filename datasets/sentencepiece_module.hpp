// The interface of libdtrain_sentencepiece.so, the one place that calls
// Debian's libsentencepiece. That library carries its own copy of protobuf
// (3.14) with every symbol exported, which cannot share a process's symbol
// scope with the libprotobuf (3.21) dtrain links: loading both the usual way
// aborts at start-up. So dtrain loads this module at run time
// (datasets/sentencepiece.cpp) with RTLD_LOCAL | RTLD_DEEPBIND: the module
// and libsentencepiece resolve protobuf to libsentencepiece's copy, and
// nothing else sees it. Both sides share the process's libstdc++, so the
// table passes std:: types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

extern "C" {

struct DtrainSentencePieceModule {
  uint32_t abi_version;  // kDtrainSentencePieceAbi
  // A processor of the serialized model `bytes`; null with *error set when
  // they are not a model.
  void* (*load)(const std::string* bytes, std::string* error);
  void (*release)(void* processor);
  // The pieces of `text` (valid UTF-8); false with *error set on failure.
  bool (*encode)(const void* processor, const char* text, size_t size, std::vector<std::string>* pieces,
                 std::string* error);
  // The model's ids, and the text and kind of one (kPieceNormal, ...).
  int (*size)(const void* processor);
  int (*piece)(const void* processor, int id, std::string* text);
  // Trains a model on the sentences next(ctx, &line) gives until it returns
  // false, with SentencePieceTrainer's options `args`; *model: the
  // serialized model. False with *error set when training fails.
  bool (*train)(const std::vector<std::pair<std::string, std::string>>* args, bool (*next)(void* ctx, std::string* line),
                void* ctx, std::string* model, std::string* error);
};

const DtrainSentencePieceModule* dtrain_sentencepiece_module(void) noexcept;
using DtrainSentencePieceEntry = const DtrainSentencePieceModule* (*)() noexcept;

}  // extern "C"

inline constexpr uint32_t kDtrainSentencePieceAbi = 1;
inline constexpr const char* kDtrainSentencePieceEntry = "dtrain_sentencepiece_module";
inline constexpr const char* kDtrainSentencePieceFile = "libdtrain_sentencepiece.so";
inline constexpr int kPieceNormal = 0, kPieceUnknown = 1, kPieceControl = 2, kPieceUnused = 3;
