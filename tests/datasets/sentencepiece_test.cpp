// tokenizer: sentencepiece: a model trained by train_sentencepiece (dtrain
// data sentencepiece), its pieces and encoding through the run-time module,
// the vocabulary over its pieces, the vocabulary file with the model beside
// it, text_folder examples tokenized by it, and the errors. Skipped where the
// module cannot load (sanitizer builds; datasets/sentencepiece_module.hpp).
#include <doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "data_test_util.hpp"
#include "datasets/sentencepiece.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/token_ids.hpp"
#include "datasets/tokenizer.hpp"
#include "engine/io/file_util.hpp"

namespace dtrain {
namespace {

using data_testing::TempDir;
using data_testing::write_text;

const char* kCorpus =
    "the quick brown fox jumps over the lazy dog\n"
    "a quick brown dog jumps over the lazy fox\n"
    "\n"
    "the lazy dog sleeps while the quick fox runs\r\n"
    "foxes and dogs are quick and lazy\n";

// A model trained on kCorpus written 20 times into `dir`/corpus.txt.
SentencePieceModelPtr trained_model(const TempDir& tmp, int64_t vocab_size, const std::string& name) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += kCorpus;
  write_text(tmp.file("corpus.txt"), text);
  SentencePieceTraining t;
  t.files = {tmp.file("corpus.txt")};
  t.vocab_size = vocab_size;
  auto trained = train_sentencepiece(t, tmp.file(name));
  REQUIRE_MESSAGE(trained.ok(), trained.error().message);
  CHECK(trained->sentences == 80);  // empty lines skipped
  auto m = SentencePieceModel::load(tmp.file(name));
  REQUIRE_MESSAGE(m.ok(), m.error().message);
  CHECK(trained->pieces == (*m)->size());
  return *m;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += p;
  return out;
}

TEST_CASE("sentencepiece: a trained model's pieces segment text, and its vocabulary maps them to ids") {
  if (Status s = sentencepiece_status(); !s) {
    MESSAGE("skipped: " << s.error().message);
    return;
  }
  TempDir tmp;
  const SentencePieceModelPtr m = trained_model(tmp, 40, "m.model");
  CHECK(m->size() <= 40);
  // <unk>, <s> and </s> are the model's but never an encoded piece.
  CHECK(static_cast<int64_t>(m->pieces().size()) == m->size() - 3);
  for (const char* special : {"<unk>", "<s>", "</s>"}) {
    CHECK(std::find(m->pieces().begin(), m->pieces().end(), special) == m->pieces().end());
  }
  // The pieces of a text are its normalized form cut up: "▁" before each word.
  const std::vector<std::string> pieces = m->encode("the  lazy fox");
  CHECK(pieces.size() >= 3);
  CHECK(joined(pieces) == "\u2581the\u2581lazy\u2581fox");
  // Trained twice on the same text: the same model.
  TempDir again;
  CHECK(trained_model(again, 40, "m.model")->bytes() == m->bytes());

  const TokenVocabulary v(m);
  CHECK(v.tokenizer() == Tokenizer::kSentencePiece);
  CHECK(v.size() == m->size() - 3 + 2);
  CHECK(v.id(m->pieces()[0]) == 2);
  CHECK(v.id(m->pieces().back()) == v.size() - 1);
  // A character the model never saw reads as <unk>.
  const std::vector<std::string> snow = v.text_tokenizer().tokens("fox \u2603", {'f', 'o', 'x', ' ', 0x2603});
  const std::vector<int32_t> ids = token_ids(v, snow, 6);
  CHECK(std::find(ids.begin(), ids.end(), TokenVocabulary::kUnk) != ids.end());
  CHECK(ids.back() == TokenVocabulary::kPad);
}

TEST_CASE("sentencepiece: the vocabulary file keeps the model beside it, and a mismatch is a data error") {
  if (!sentencepiece_status()) return;
  TempDir tmp;
  const SentencePieceModelPtr m = trained_model(tmp, 40, "m.model");
  std::filesystem::create_directories(tmp.file("model_dir"));
  const std::string json = tmp.file("model_dir/token_vocab.json");
  REQUIRE(write_token_vocabulary_file(json, TokenVocabulary(m)).ok());
  CHECK(io::read_whole_file(tmp.file("model_dir/sentencepiece.model"), ErrorKind::kData).value() == m->bytes());
  auto back = read_token_vocabulary_file(json);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(back->tokenizer() == Tokenizer::kSentencePiece);
  CHECK(back->tokens() == m->pieces());
  CHECK(back->text_tokenizer().sentencepiece->encode("quick dogs") == m->encode("quick dogs"));

  // Another model beside the JSON: its pieces are not the listed tokens.
  const SentencePieceModelPtr other = trained_model(tmp, 30, "other.model");
  write_text(tmp.file("model_dir/sentencepiece.model"), other->bytes());
  auto bad = read_token_vocabulary_file(json);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kData);
  CHECK(bad.error().message.find(json + ": not a dtrain token vocabulary file: its tokens are not the pieces of its "
                                        "SentencePiece model") == 0);
  // No model at all.
  std::filesystem::remove(tmp.file("model_dir/sentencepiece.model"));
  auto missing = read_token_vocabulary_file(json);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find(tmp.file("model_dir/sentencepiece.model")) != std::string::npos);
  // Not a model.
  auto garbage = SentencePieceModel::from_bytes("not a model", "x.model");
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().kind == ErrorKind::kData);
  CHECK(garbage.error().message.find("x.model: not a SentencePiece model") == 0);
}

TEST_CASE("text_folder with tokenizer sentencepiece: ids of the model's pieces, padded") {
  if (!sentencepiece_status()) return;
  TempDir tmp;
  const SentencePieceModelPtr m = trained_model(tmp, 40, "m.model");
  for (const char* c : {"a", "b"}) std::filesystem::create_directories(tmp.file(std::string("texts/") + c));
  write_text(tmp.file("texts/a/1.txt"), "\xef\xbb\xbfthe quick fox");
  write_text(tmp.file("texts/b/1.txt"), "lazy dogs sleep");
  DataSourceSpec spec;
  spec.format = "text_folder";
  spec.dir = tmp.file("texts");
  spec.max_length = 24;
  spec.tokenizer = "sentencepiece";
  spec.sentencepiece_model = tmp.file("m.model");
  spec.prefetch = 0;
  auto v = build_text_folder_vocabulary(spec, SourceContext{"", "data.train: "});
  REQUIRE_MESSAGE(v.ok(), v.error().message);
  CHECK((*v)->tokens() == m->pieces());
  auto source = load_text_folder_source(spec, SourceContext{"", "data.train: "});
  REQUIRE_MESSAGE(source.ok(), source.error().message);
  const Batch b = (*source)->gather({0, 1}, 1.0f);
  const std::vector<float> got = token_vector(b.features);
  const TokenVocabulary& vocab = **v;
  const std::vector<int32_t> a = token_ids(vocab, m->encode("the quick fox"), 24);  // the BOM dropped
  const std::vector<int32_t> d = token_ids(vocab, m->encode("lazy dogs sleep"), 24);
  for (int64_t i = 0; i < 24; ++i) {
    CHECK(got[static_cast<size_t>(i)] == static_cast<float>(a[static_cast<size_t>(i)]));
    CHECK(got[static_cast<size_t>(24 + i)] == static_cast<float>(d[static_cast<size_t>(i)]));
  }
  CHECK(a[0] != TokenVocabulary::kUnk);

  spec.sentencepiece_model = tmp.file("missing.model");
  auto missing = build_text_folder_vocabulary(spec, SourceContext{"", "data.train: "});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("data.train: sentencepiece_model: " + tmp.file("missing.model")) == 0);
}

}  // namespace
}  // namespace dtrain
