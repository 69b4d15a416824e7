// `dtrain data convert` (IDX/CSV/NPY/NPZ -> TFRecord shards of tf.Example, or
// -> .npy), `dtrain data inspect FILE` (a TFRecord file's first records) and
// `dtrain data sentencepiece` (a SentencePiece model trained on text files or
// a text_folder's training split); fetch and bench have their own files.
#include "cli/data_commands.hpp"
#include "cli/bench_command.hpp"
#include "cli/fetch_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "datasets/example_convert.hpp"
#include "datasets/sentencepiece.hpp"
#include "datasets/source.hpp"
#include "datasets/text_folder_source.hpp"
#include "engine/base/status.hpp"

namespace dtrain::cli {
namespace {

struct DataArgs {
  DataSourceSpec from;      // format, images, labels, path, header, delimiter, label_column, arrays
  ConvertOptions convert;
  std::string file;         // inspect
  int64_t records = 3;
  size_t values = 8;
  // sentencepiece: text files, or a text_folder (from.dir, holdout, classes)
  SentencePieceTraining sentencepiece;
  std::string out;
};

int report(const Error& e) {
  std::fprintf(stderr, "dtrain: %s\n", e.message.c_str());
  return static_cast<int>(exit_code_for(e.kind));
}

int run_convert(const DataArgs& a) {
  auto source = load_source(a.from, SourceContext{"", "data convert: "});
  if (!source) return report(source.error());
  auto result = convert_source(**source, a.convert);
  if (!result) return report(result.error());
  std::printf("wrote %lld examples from %s to %zu file(s):\n", static_cast<long long>(result->examples),
              (*source)->describe().c_str(), result->files.size());
  for (const std::string& f : result->files) std::printf("  %s\n", f.c_str());
  std::printf("read them back with this data source:\n  %s\n", result->spec.c_str());
  return 0;
}

int run_inspect(const DataArgs& a) {
  auto text = inspect_tfrecord(a.file, a.records, a.values);
  if (!text) return report(text.error());
  std::fputs(text->c_str(), stdout);
  return 0;
}

int run_sentencepiece(DataArgs a) {
  if (a.from.dir.empty() == a.sentencepiece.files.empty()) {
    return report(config_error("data sentencepiece: give text files or --dir (a folder of class folders of .txt "
                               "files, as format text_folder reads), one of the two"));
  }
  std::string what;
  if (!a.from.dir.empty()) {
    auto listed = list_text_folder_files(a.from, SourceContext{"", "data sentencepiece: "}, "train");
    if (!listed) return report(listed.error());
    for (const auto& files : listed->files) {
      a.sentencepiece.files.insert(a.sentencepiece.files.end(), files.begin(), files.end());
    }
    if (a.sentencepiece.files.empty()) {
      return report(data_error(fmt::format("data sentencepiece: dir {}: no .txt files in the class folders",
                                           listed->dir)));
    }
    what = fmt::format("{} .txt files of {} ({} classes{})", a.sentencepiece.files.size(), listed->dir,
                       listed->classes.size(),
                       a.from.holdout > 0 ? fmt::format(", holdout {} left out", a.from.holdout) : "");
  } else {
    what = fmt::format("{} file{}", a.sentencepiece.files.size(), a.sentencepiece.files.size() == 1 ? "" : "s");
  }
  auto trained = train_sentencepiece(a.sentencepiece, a.out);
  if (!trained) return report(trained.error());
  std::printf("trained a %s SentencePiece model of %lld pieces on %lld lines of %s\nwrote %s\nuse it in a job:\n"
              "  tokenizer: sentencepiece\n  sentencepiece_model: %s\n",
              a.sentencepiece.model_type.c_str(), static_cast<long long>(trained->pieces),
              static_cast<long long>(trained->sentences), what.c_str(), a.out.c_str(), a.out.c_str());
  return 0;
}

}  // namespace

void add_data_subcommands(CLI::App& data_app, int& exit_code) {
  auto args = std::make_shared<DataArgs>();
  CLI::App* data = &data_app;
  data->require_subcommand(1);

  auto fetch_args = std::make_shared<FetchCommandOptions>();
  CLI::App* fetch = data->add_subcommand("fetch", "download mnist or fashion_mnist, verify checksums, resume partial downloads");
  declare_data_fetch(*fetch, *fetch_args);
  fetch->callback([fetch_args, &exit_code] { exit_code = run_data_fetch(*fetch_args); });

  CLI::App* convert = data->add_subcommand(
      "convert", "write IDX, CSV, NPY, NPZ or image-folder data as TFRecord shards of tf.Example (or as .npy)");
  convert->add_option("--format", args->from.format, "input format: idx, csv, npy, npz or image_folder")
      ->required()->check(CLI::IsMember({"idx", "csv", "npy", "npz", "image_folder"}));
  convert->add_option("--images", args->from.images, "idx/npy: the features file");
  convert->add_option("--labels", args->from.labels, "idx/npy: the labels file");
  convert->add_option("--path", args->from.path, "csv/npz: the file");
  convert->add_flag("!--no-header", args->from.header, "csv: the first row is data, not column names");
  convert->add_option("--delimiter", args->from.delimiter, "csv: the field separator");
  convert->add_option("--label-column", args->from.label_column, "csv: label column by name or index (default last)");
  convert->add_option("--features-array", args->from.features_array, "npz: name of the features array (default images)");
  convert->add_option("--labels-array", args->from.labels_array, "npz: name of the labels array (default labels)");
  convert->add_option("--dir", args->from.dir, "image_folder: the folder of class folders");
  convert->add_option("--image-size", args->from.image_size, "image_folder: HEIGHT WIDTH every image is resized to "
                      "(default 256 256)")
      ->expected(2)->check(CLI::PositiveNumber);
  convert->add_option("--color-mode", args->from.color_mode, "image_folder: rgb (default), grayscale or rgba")
      ->check(CLI::IsMember({"rgb", "grayscale", "rgba"}));
  convert->add_option("--holdout", args->from.holdout, "image_folder: the fraction of each class held out (default 0)")
      ->check(CLI::Range(0.0, 0.999999));
  convert->add_option("--split", args->from.split, "image_folder: train (default: what is not held out) or holdout")
      ->check(CLI::IsMember({"train", "holdout"}));
  convert->add_option("--out", args->convert.out_dir, "output directory")->required();
  convert->add_option("--name", args->convert.name, "output file name stem (default data)");
  convert->add_option("--to", args->convert.to, "tfrecord (default) or npy")->check(CLI::IsMember({"tfrecord", "npy"}));
  convert->add_option("--shards", args->convert.shards, "tfrecord: number of files (default 1)")->check(CLI::PositiveNumber);
  convert->add_flag("--gzip", args->convert.gzip, "tfrecord: GZIP-compress the files");
  convert->callback([args, &exit_code] { exit_code = run_convert(*args); });

  CLI::App* inspect = data->add_subcommand("inspect", "print the first records of a TFRecord file of tf.Example");
  inspect->add_option("file", args->file, "the TFRecord file (GZIP or not)")->required();
  inspect->add_option("--records", args->records, "records to print (default 3)")->check(CLI::NonNegativeNumber);
  inspect->add_option("--values", args->values, "values to print per feature (default 8)");
  inspect->callback([args, &exit_code] { exit_code = run_inspect(*args); });

  CLI::App* sp = data->add_subcommand(
      "sentencepiece", "train a SentencePiece subword model (for tokenizer: sentencepiece) on text files or on the "
                       "training split of a folder of class folders of .txt files");
  sp->add_option("files", args->sentencepiece.files, "UTF-8 text files, each line a sentence")
      ->check(CLI::ExistingFile);
  sp->add_option("--dir", args->from.dir, "a folder of class folders of .txt files (format text_folder), its training "
                 "split read");
  sp->add_option("--holdout", args->from.holdout, "--dir: the fraction of each class held out, as the job's "
                 "holdout (default 0): those files are left out")
      ->check(CLI::Range(0.0, 0.999999));
  sp->add_option("--classes", args->from.classes, "--dir: the class folders to read (default every sub-folder)");
  sp->add_option("--vocab-size", args->sentencepiece.vocab_size, "pieces in the model, <unk>, <s> and </s> included "
                 "(default 8000); a cap unless --exact-vocab-size")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 24));
  sp->add_flag("--exact-vocab-size", [args](int64_t) { args->sentencepiece.vocab_size_is_cap = false; },
               "fail when the text gives fewer pieces than --vocab-size (spm_train's hard_vocab_limit)");
  sp->add_option("--model-type", args->sentencepiece.model_type, "unigram (default), bpe, word or char")
      ->check(CLI::IsMember({"unigram", "bpe", "word", "char"}));
  sp->add_option("--character-coverage", args->sentencepiece.character_coverage,
                 "the share of characters covered (default 1.0; 0.9995 for languages with large alphabets)")
      ->check(CLI::Range(0.5, 1.0));
  sp->add_option("--threads", args->sentencepiece.threads, "training threads (default 1)")
      ->check(CLI::Range(1, 256));
  sp->add_option("--out", args->out, "the model file to write (e.g. text.model)")->required();
  sp->callback([args, &exit_code] { exit_code = run_sentencepiece(*args); });

  auto bench_args = std::make_shared<BenchCommandOptions>();
  CLI::App* bench = data->add_subcommand("bench", "read a job's input as training would, without training: examples/s, MiB/s, peak RSS");
  declare_data_bench(*bench, *bench_args);
  bench->callback([bench_args, &exit_code] { exit_code = run_data_bench(*bench_args); });
}

}  // namespace dtrain::cli
