// format text_folder and its tokenizers: word and char tokens (lower-casing,
// the split pattern, apostrophes), the vocabulary's order and caps, its JSON
// file, padding and truncation, the class folders and holdout split, and the
// located errors (invalid UTF-8, missing max_length, one class folder).
#include <doctest.h>

#include <filesystem>

#include "data_test_util.hpp"
#include "datasets/stream_choice.hpp"
#include "datasets/text_folder_source.hpp"
#include "datasets/token_ids.hpp"
#include "datasets/tokenizer.hpp"
#include "datasets/utf8.hpp"

namespace dtrain {
namespace {

using data_testing::TempDir;
using data_testing::write_text;

std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> out;
  Utf8Problem p;
  REQUIRE(decode_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size(), out, &p));
  return out;
}

std::vector<std::string> words(const std::string& s) { return tokenize(Tokenizer::kWord, code_points(s)); }

DataSourceSpec folder_spec(const std::string& dir, int64_t max_length) {
  DataSourceSpec s;
  s.format = "text_folder";
  s.dir = dir;
  s.max_length = max_length;
  s.prefetch = 0;
  return s;
}

void make_dir(const std::string& path) { std::filesystem::create_directories(path); }

TEST_CASE("word tokens: lower-cased runs of letters, digits and inner apostrophes") {
  CHECK(words("Don't STOP -- it's 3pm!") == std::vector<std::string>{"don't", "stop", "it's", "3pm"});
  CHECK(words("'quoted' words, tab\tand\nnewline") ==
        std::vector<std::string>{"quoted", "words", "tab", "and", "newline"});
  CHECK(words("  ...  ") == std::vector<std::string>{});
  CHECK(words("snake_case and x-ray") == std::vector<std::string>{"snake", "case", "and", "x", "ray"});
  // Latin-1, Latin Extended-A, Greek and Cyrillic capitals; U+2019 as an apostrophe; U+2014 separates.
  CHECK(words("ÉCOLE Łódź ΑΒΓ МОСКВА l\u2019été\u2014fin") ==
        std::vector<std::string>{"école", "łódź", "αβγ", "москва", "l'été", "fin"});
  CHECK(words("a×b") == std::vector<std::string>{"a", "b"});
}

TEST_CASE("char tokens: every code point as written") {
  CHECK(tokenize(Tokenizer::kChar, code_points("Aé b")) == std::vector<std::string>{"A", "é", " ", "b"});
}

TEST_CASE("lower_code_point leaves what it does not know") {
  CHECK(lower_code_point('Q') == 'q');
  CHECK(lower_code_point(0xd7) == 0xd7);    // ×
  CHECK(lower_code_point(0x178) == 0xff);   // Ÿ -> ÿ
  CHECK(lower_code_point(0x4e2d) == 0x4e2d);
  CHECK_FALSE(is_word_code_point(0x3002));  // 。
  CHECK(is_word_code_point(0x4e2d));        // 中
}

TEST_CASE("the vocabulary: <pad>, <unk>, then tokens by count descending, ties by token; caps") {
  const std::map<std::string, int64_t> counts{{"b", 3}, {"a", 3}, {"c", 5}, {"d", 1}, {"e", 2}};
  const auto v = TokenVocabulary::from_counts(Tokenizer::kWord, counts, 0, 1);
  CHECK(v.tokens() == std::vector<std::string>{"c", "a", "b", "e", "d"});
  CHECK(v.size() == 7);
  CHECK(v.id("c") == 2);
  CHECK(v.id("d") == 6);
  CHECK(v.id("zzz") == TokenVocabulary::kUnk);
  const auto capped = TokenVocabulary::from_counts(Tokenizer::kWord, counts, 4, 1);
  CHECK(capped.tokens() == std::vector<std::string>{"c", "a"});
  CHECK(capped.size() == 4);
  const auto frequent = TokenVocabulary::from_counts(Tokenizer::kWord, counts, 0, 3);
  CHECK(frequent.tokens() == std::vector<std::string>{"c", "a", "b"});
}

TEST_CASE("token ids are padded with 0 or truncated to the length") {
  const TokenVocabulary v(Tokenizer::kWord, {"x", "y"});
  int64_t unknown = 0;
  CHECK(token_ids(v, {"x", "q", "y"}, 5, &unknown) == std::vector<int32_t>{2, 1, 3, 0, 0});
  CHECK(unknown == 1);
  CHECK(token_ids(v, {"y", "y", "x", "x"}, 2) == std::vector<int32_t>{3, 3});
}

TEST_CASE("the vocabulary file round-trips, and a bad one is a located data error") {
  TempDir tmp;
  const TokenVocabulary v(Tokenizer::kChar, {"é", "a", "\""});
  REQUIRE(write_token_vocabulary_file(tmp.file("v.json"), v).ok());
  auto back = read_token_vocabulary_file(tmp.file("v.json"));
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(back->tokenizer() == Tokenizer::kChar);
  CHECK(back->tokens() == v.tokens());
  write_text(tmp.file("bad.json"), R"({"dtrain_token_vocabulary": 1, "tokenizer": "word", "tokens": ["a", "b"]})");
  auto bad = read_token_vocabulary_file(tmp.file("bad.json"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().kind == ErrorKind::kData);
  CHECK(bad.error().message ==
        tmp.file("bad.json") + ": not a dtrain token vocabulary file: \"tokens\" does not start with \"<pad>\", \"<unk>\"");
}

TEST_CASE("text_folder: class folders, padded ids, labels, the holdout split and the vocabulary of training") {
  TempDir tmp;
  make_dir(tmp.file("b_neg"));
  make_dir(tmp.file("a_pos/sub"));
  write_text(tmp.file("a_pos/1.txt"), "Good good GREAT");
  write_text(tmp.file("a_pos/sub/2.TXT"), "\xef\xbb\xbfgood");  // a BOM is dropped
  write_text(tmp.file("a_pos/notes.md"), "ignored");
  write_text(tmp.file("b_neg/1.txt"), "bad, bad! awful terrible words here");
  DataSourceSpec spec = folder_spec(tmp.dir(), 4);
  auto src = load_text_folder_source(spec, SourceContext{"", "data.train: "});
  REQUIRE_MESSAGE(src.ok(), src.error().message);
  CHECK((*src)->size() == 3);
  CHECK((*src)->class_names() == std::vector<std::string>{"a_pos", "b_neg"});
  CHECK((*src)->feature_dtype() == kTokenDType);
  CHECK((*src)->feature_shape() == Shape{4});
  // good 3, bad 2, then awful, great, here, terrible, words (1 each, by token).
  const Batch b = (*src)->gather({0, 1, 2}, 1.0f);
  CHECK(token_vector(b.features) == std::vector<float>{2, 2, 5, 0, 2, 0, 0, 0, 3, 3, 4, 7});
  CHECK(std::vector<float>(b.labels.data(), b.labels.data() + 3) == std::vector<float>{0, 0, 1});
  CHECK((*src)->summary() == "text_folder " + tmp.dir() +
                                 ": 3 files in 2 classes: 0 a_pos (2), 1 b_neg (1); 10 word tokens, 3.3 per file, "
                                 "padded or truncated to 4 (1 truncated); vocabulary 9 ids (<pad>, <unk> + 7 word "
                                 "tokens)");

  // Holdout: the same files whatever the listing; held-out files are read with the training vocabulary.
  for (int i = 0; i < 10; ++i) {
    write_text(tmp.file("a_pos/p" + std::to_string(i) + ".txt"), "good");
    write_text(tmp.file("b_neg/n" + std::to_string(i) + ".txt"), "bad unseen" + std::to_string(i));
  }
  spec.holdout = 0.3;
  auto train = load_text_folder_source(spec, SourceContext{"", "data.train: "});
  spec.split = "holdout";
  auto held = load_text_folder_source(spec, SourceContext{"", "data.eval: "});
  REQUIRE(train.ok());
  REQUIRE(held.ok());
  CHECK((*train)->size() + (*held)->size() == 23);
  CHECK((*held)->size() == 3 + 3);  // floor(0.3 x 12) + floor(0.3 x 11)
  auto vocab = build_text_folder_vocabulary(spec, SourceContext{"", "data.eval: "});
  REQUIRE(vocab.ok());
  // Words only in held-out files are not in the vocabulary of the training
  // split: each of the 10 unseen<i> is in it or read as <unk> in held-out.
  int64_t unseen = 0, unknown = 0;
  for (const std::string& t : (*vocab)->tokens()) unseen += t.rfind("unseen", 0) == 0 ? 1 : 0;
  std::vector<int64_t> all((*held)->size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const std::vector<float> ids = token_vector((*held)->gather(all, 1.0f).features);
  for (size_t i = 0; i < all.size(); ++i) unknown += ids[i * 4 + 1] == 1.0f ? 1 : 0;
  CHECK(unseen < 10);
  CHECK(unseen + unknown == 10);
}

TEST_CASE("text_folder errors name the file or the key") {
  TempDir tmp;
  make_dir(tmp.file("one"));
  write_text(tmp.file("one/a.txt"), "x");
  auto one = load_text_folder_source(folder_spec(tmp.dir(), 4), SourceContext{"", "job.yaml:3:3: data.train: "});
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().kind == ErrorKind::kData);
  CHECK(one.error().message.rfind("job.yaml:3:3: data.train: dir " + tmp.dir() + ": 1 class folder(s); expected", 0) == 0);

  make_dir(tmp.file("two"));
  write_text(tmp.file("two/b.txt"), "ok \xff here");
  auto utf8 = load_text_folder_source(folder_spec(tmp.dir(), 4), SourceContext{"", "data.train: "});
  REQUIRE_FALSE(utf8.ok());
  CHECK(utf8.error().kind == ErrorKind::kData);
  CHECK(utf8.error().message == tmp.file("two/b.txt") +
                                    ": invalid UTF-8 at byte offset 3: byte 0xff cannot start a character; "
                                    "text_folder reads UTF-8 text files");

  auto no_length = load_text_folder_source(folder_spec(tmp.dir(), 0), SourceContext{"", "data.train: "});
  REQUIRE_FALSE(no_length.ok());
  CHECK(no_length.error().kind == ErrorKind::kConfig);
  CHECK(no_length.error().message == "data.train: format text_folder needs max_length (token ids per example, padded "
                                     "or truncated) of at least 1, got 0");
  DataSourceSpec bad = folder_spec(tmp.dir(), 4);
  bad.tokenizer = "bpe";
  auto tok = load_text_folder_source(bad, SourceContext{"", "data.train: "});
  REQUIRE_FALSE(tok.ok());
  CHECK(tok.error().message == "data.train: tokenizer \"bpe\" is not one of word, char, sentencepiece");
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

TEST_CASE("text_folder reads as training goes with stream: true, or under auto when its files pass a quarter of memory") {
  DataSourceSpec spec = folder_spec("texts", 8);
  CHECK_FALSE(reads_as_training_goes(spec, 100, int64_t{1000}));
  CHECK_FALSE(reads_as_training_goes(spec, 250, int64_t{1000}));
  CHECK(reads_as_training_goes(spec, 251, int64_t{1000}));
  CHECK_FALSE(reads_as_training_goes(spec, int64_t{1} << 40, std::nullopt));  // room unknown: held
  spec.stream = true;
  CHECK(reads_as_training_goes(spec, 1, int64_t{1000}));
  spec.stream = false;
  CHECK_FALSE(reads_as_training_goes(spec, 900, int64_t{1000}));
  CHECK(streams_by_itself("text_folder"));
  CHECK_FALSE(resolves_to_stream(spec, InputOptions{}));  // never make_stream_input's path

  spec.stream.reset();
  InputOptions options;
  options.name = "data.train";
  const DataSize size{120, 3 << 20};
  CHECK(describe_stream_choice(spec, options, size, int64_t{8} << 20, "MemAvailable") ==
        "data.train: 120 text_folder files, 3.0 MiB: files read and tokenized as training goes (stream: auto: more "
        "than a quarter of the 8.0 MiB of memory available (MemAvailable))");
  CHECK(describe_stream_choice(spec, options, size, int64_t{64} << 20, "MemAvailable") ==
        "data.train: 120 text_folder files, 3.0 MiB: token ids held in memory (stream: auto: at most a quarter of the "
        "64.0 MiB of memory available (MemAvailable))");
}

}  // namespace
}  // namespace dtrain
