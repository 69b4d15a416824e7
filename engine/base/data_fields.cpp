// The field tables of the job's data sources (data.train, data.eval,
// data.predict): each option of a source, its synthetic generators and
// interleave, written once (engine/base/fields.hpp); the map operations and
// CSV columns are in map_op_fields.cpp.
#include <algorithm>

#include "engine/base/job_spec.hpp"

namespace dtrain {
namespace {

// The options of the text format, written in the resolved job only for it
// (sequence_length has no default to print).
bool is_text(const void* source) { return static_cast<const DataSourceSpec*>(source)->format == "text"; }
bool is_image_folder(const void* source) {
  return static_cast<const DataSourceSpec*>(source)->format == "image_folder";
}
bool is_csv(const void* source) { return static_cast<const DataSourceSpec*>(source)->format == "csv"; }
bool is_text_folder(const void* source) { return static_cast<const DataSourceSpec*>(source)->format == "text_folder"; }
bool is_a_folder(const void* source) { return is_image_folder(source) || is_text_folder(source); }
bool is_folder_or_csv(const void* source) { return is_a_folder(source) || is_csv(source); }
bool is_text_or_csv(const void* source) { return is_text_folder(source) || is_csv(source); }
// text_folder, or csv with a text column: the keys of tokens.
bool has_text(const void* source) {
  const auto* s = static_cast<const DataSourceSpec*>(source);
  return is_text_folder(source) ||
         (is_csv(source) && std::any_of(s->columns.begin(), s->columns.end(),
                                        [](const CsvColumnSpec& c) { return c.type == "text"; }));
}
bool uses_sentencepiece(const void* source) {
  return is_text_or_csv(source) && static_cast<const DataSourceSpec*>(source)->tokenizer == "sentencepiece";
}
bool is_text_or_a_folder(const void* source) { return is_text(source) || is_a_folder(source); }

// data.eval and data.predict: read once unless the job says repeat.
void* evaluation_source(void* member) {
  DataSourceSpec& d = static_cast<std::optional<DataSourceSpec>*>(member)->emplace();
  d.repeat = false;
  return &d;
}

std::span<const Field> synthetic_fields() {
  static const Field kFields[] = {
      field<&SyntheticSpec::num_examples>("num_examples", "Number of examples.").min(1),
      field<&SyntheticSpec::shape>("shape", "Shape of one example.")
          .shaped(R"({"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1})"),
      field<&SyntheticSpec::num_classes>("num_classes", "Labels are drawn from 0 .. num_classes-1.").min(1),
      field<&SyntheticSpec::seed>("seed", "Seed of the generator.").min(0),
  };
  return kFields;
}

std::span<const Field> synthetic_sequence_fields() {
  static const Field kFields[] = {
      field<&SyntheticSequenceSpec::task>(
          "task", "The task (see above): is_sorted has 2 classes, reverse vocab_size per position.")
          .shaped(R"({"enum": ["is_sorted", "reverse"]})"),
      field<&SyntheticSequenceSpec::vocab_size>("vocab_size", "Tokens are ids 0 .. vocab_size-1.").min(2).max(16777216),
      field<&SyntheticSequenceSpec::sequence_length>("sequence_length", "Tokens per example.").min(2),
      field<&SyntheticSequenceSpec::num_examples>("num_examples", "Number of examples.").min(1),
      field<&SyntheticSequenceSpec::seed>("seed", "Seed of the generator.").min(0),
  };
  return kFields;
}

std::span<const Field> interleave_fields() {
  static const Field kFields[] = {
      field<&InterleaveSpec::cycle_length>("cycle_length", "Files read at the same time.").min(1).need(),
      field<&InterleaveSpec::block_length>("block_length",
                                           "Consecutive examples taken from one file before moving to the next.")
          .min(1),
  };
  return kFields;
}

}  // namespace

std::span<const Field> data_source_fields() {
  static const Field kFields[] = {
      field<&DataSourceSpec::format>(
          "format",
          "File format: idx (MNIST files, may be gzipped), csv, synthetic, synthetic_sequence (seeded sequence tasks "
          "for tests), tfrecord (tf.Example records), npy (one NumPy file each for images and labels), npz (one NumPy "
          "zip holding both), text (token windows of text files for language models), image_folder (a folder of "
          "class folders of JPEG and PNG images) or text_folder (a folder of class folders of .txt files, one example "
          "each, for text classification).")
          .shaped(R"({"enum": ["idx", "csv", "synthetic", "synthetic_sequence", "tfrecord", "npy", "npz", "text",
                       "image_folder", "text_folder"]})")
          .need(),
      custom<&DataSourceSpec::images>("images",
                                      "idx: the images file (may be .gz); npy: the features .npy file. Relative to the "
                                      "job file's directory; required for idx and npy.",
                                      "job_path")
          .shaped(R"({"type": "string", "minLength": 1})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->images.empty(); }),
      custom<&DataSourceSpec::labels>("labels",
                                      "idx: the labels file (may be .gz); npy: the labels .npy file. Relative to the "
                                      "job file's directory; required for idx and npy.",
                                      "job_path")
          .shaped(R"({"type": "string", "minLength": 1})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->labels.empty(); }),
      custom<&DataSourceSpec::path>(
          "path", "csv or npz: the file, relative to the job file's directory; required for csv and npz.", "job_path")
          .shaped(R"({"type": "string", "minLength": 1})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->path.empty(); }),
      field<&DataSourceSpec::header>("header", "csv: the first row names the columns."),
      field<&DataSourceSpec::delimiter>("delimiter", "csv: the field separator (one character).")
          .shaped(R"({"type": "string", "minLength": 1, "maxLength": 1})"),
      field<&DataSourceSpec::label_column>(
          "label_column", "csv: the label column, by name (with header) or 0-based index; \"\" means the last column.")
          .shaped(R"({"type": ["string", "integer"]})"),
      custom<&DataSourceSpec::columns>(
          "columns",
          "csv: the feature columns, in the order their features are concatenated: each a name or 0-based index "
          "(a number column), or a mapping {name, type: number|category, fill, max_categories}. Empty means all "
          "but the label (and weight) column, as numbers. What category columns and fills learn from data.train "
          "(vocabularies, means, medians, and the label's class names) is saved with the model as "
          "model_dir/preprocessing.json and used by evaluate and predict.",
          "csv_columns"),
      field<&DataSourceSpec::na_values>(
          "na_values", "csv: the field texts (after trimming spaces) that mean a missing value.")
          .shaped(R"({"type": "array", "items": {"type": "string"}})")
          .shown_when(is_csv),
      field<&DataSourceSpec::feature_shape>("feature_shape", "csv: shape of each row's features; empty means flat.")
          .shaped(R"({"type": "array", "items": {"type": "integer", "minimum": 1}})"),
      custom<&DataSourceSpec::files>(
          "files",
          "tfrecord and text: a glob of the files (* ? [...] in the file name part), or a list of globs and paths, "
          "relative to the job file's directory; the lists are read in the order given, the matches of one glob in "
          "sorted name order. Required for tfrecord and text.",
          "job_paths")
          .shaped(
              R"({"oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->files.empty(); }),
      field<&DataSourceSpec::compression>(
          "compression", "tfrecord: none, gzip, or auto (gzip when a file starts with the gzip magic bytes 1f 8b).")
          .shaped(R"({"enum": ["none", "gzip", "auto"]})"),
      field<&DataSourceSpec::on_error>(
          "on_error",
          "tfrecord: a corrupt record (bad CRC, truncated) stops loading (fail) or is skipped and counted (skip); "
          "after a corrupt length the rest of that file is skipped. image_folder: a .jpg/.jpeg/.png file that is not "
          "a JPEG or PNG image is an error naming it when it is first read (fail), or, checking every file's header "
          "at start-up (one read of each file), is left out and counted (skip); an image whose header is good but "
          "whose data is corrupt is an error naming the file when it is read.")
          .shaped(R"({"enum": ["fail", "skip"]})"),
      custom<&DataSourceSpec::features>(
          "features",
          "tfrecord: the tf.Example features to read, name: {dtype: float|int64|bytes, shape: [dims] ([] = one value), "
          "decode: raw_uint8 (bytes: the pixels of shape) or png (bytes: a PNG image of shape [height, width, "
          "channels], 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA, converted as needed) or jpeg (bytes: a JPEG image of shape "
          "[height, width, 1 or 3]; [null, null, C] when the images' sizes vary: streamed (stream: auto or true) with "
          "a map that starts with random_resized_crop or resize_center_crop), variable: true (up to shape's element "
          "count, padded with default), default: number (fills a missing feature)}. All features but label_feature are "
          "flattened and concatenated in the order written into the example's features; a single one keeps its shape. "
          "Required for tfrecord.",
          "tfrecord_features")
          .shaped(R"({"type": "object"})"),
      field<&DataSourceSpec::label_feature>(
          "label_feature",
          "tfrecord: the name of the feature (listed in features) that holds the label. Required for tfrecord.")
          .shaped(R"({"type": "string", "minLength": 1})")
          .documented_default("null")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->label_feature.empty(); }),
      field<&DataSourceSpec::features_array>(
          "features_array", "npz: the name of the features array in the archive (its file is <name>.npy).")
          .shaped(R"({"type": "string", "minLength": 1})"),
      field<&DataSourceSpec::labels_array>("labels_array", "npz: the name of the labels array in the archive.")
          .shaped(R"({"type": "string", "minLength": 1})"),
      field<&DataSourceSpec::weight>(
          "weight",
          "Per-example weights (Keras' sample_weight): csv: the column, by name (with header) or 0-based index, "
          "which is then not a feature; npz: the name of an array of N weights; tfrecord: a feature listed in features (one "
          "float or int64 value), which is then not an input. Each example's loss, its gradient and "
          "its count in the metrics (accuracy, precision, recall, mean_absolute_error) are multiplied by its weight, "
          "in training and in evaluation; the loss is still divided by the batch size, as Keras does. Weights must be "
          "finite and >= 0. Not given: every example weighs 1. Other formats cannot give weights.")
          .shaped(R"({"type": ["string", "integer"]})")
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->weight.empty(); }),
      field<&DataSourceSpec::unit>(
          "unit",
          "text: the token unit. char: the UTF-8 characters of the files (invalid UTF-8 is a data error naming the "
          "file and byte offset); byte: their bytes. The vocabulary is the sorted distinct units of data.train's files "
          "(all of them, the held-out part too) plus <unk> as the last id, for units of other text not in it; dtrain "
          "train saves it as model_dir/vocab.json and every later run of that model_dir with a checkpoint (resume, "
          "evaluate) uses the saved one, so token ids never change: when data.train's files or unit give another "
          "vocabulary, training stops with an error (a vocab.json without a checkpoint, of a first run that failed, "
          "is rebuilt). embedding input_dim: auto and dense units: auto take its size. Features are the token ids as float32 (exact for vocabularies below 2^24).")
          .shaped(R"({"enum": ["char", "byte"]})")
          .shown_when(is_text),
      field<&DataSourceSpec::sequence_length>(
          "sequence_length",
          "text: tokens per example. An example is a window of the concatenated text (files one after another): "
          "features are its sequence_length token ids, labels the next sequence_length ids (the window shifted by one "
          "token), shape [sequence_length] each. Required for text.")
          .min(1)
          .shown_when(is_text)
          .documented_default("null"),
      field<&DataSourceSpec::stride>(
          "stride",
          "text: tokens between the starts of consecutive windows; null means sequence_length (windows side by side). "
          "The units after the last whole window (with its next-token label) are not used.")
          .min(1)
          .shown_when(is_text),
      field<&DataSourceSpec::holdout>(
          "holdout",
          "text: the fraction of the text, at its end, that is held out for evaluation (the last floor(holdout x "
          "units) units of the concatenated files). image_folder, text_folder: the fraction of each class's files held "
          "out (floor(holdout x the class's files), chosen by a hash of each file's path below dir, so the same files "
          "whatever the machine or listing order). Give the same files and holdout to data.train (split: train) and "
          "data.eval (split: holdout) to evaluate on data the model never trains on; 0 means nothing is held out.")
          .min(0)
          .below(1)
          .shown_when(is_text_or_a_folder),
      field<&DataSourceSpec::split>(
          "split",
          "text, image_folder and text_folder: which side of holdout this input reads: train, what is not held out (all of it "
          "when holdout is 0); holdout, only the held-out part (needs holdout > 0).")
          .shaped(R"({"enum": ["train", "holdout"]})")
          .shown_when(is_text_or_a_folder),
      custom<&DataSourceSpec::dir>("dir",
                                   "image_folder: the folder that holds one sub-folder of images per class (e.g. "
                                   "dir/cat/*.jpg, dir/dog/*.png, sub-folders of a class folder included), relative "
                                   "to the job file's directory; required for image_folder. Files ending in .jpg, "
                                   ".jpeg or .png (any case) are read, JPEG or PNG by their bytes; others are left "
                                   "alone. text_folder: the folder of one sub-folder of .txt files (any case) per "
                                   "class (e.g. dir/neg/*.txt, dir/pos/*.txt); required for text_folder.",
                                   "job_path")
          .shaped(R"({"type": "string", "minLength": 1})")
          .documented_default("null")
          .shown_when(is_a_folder),
      field<&DataSourceSpec::classes>(
          "classes",
          "image_folder, text_folder: the class folders to read, in class-id order; empty means every sub-folder of "
          "dir, sorted by name (Keras' image_dataset_from_directory). csv: the class names a label column of names holds, in "
          "class-id order; empty means data.train's names, sorted (a label column of numbers holds class ids).")
          .shown_when(is_folder_or_csv),
      field<&DataSourceSpec::image_size>(
          "image_size",
          "image_folder: [height, width] every image is resized to (bilinear, half-pixel centres, rounded to "
          "0..255 as torchvision resizes uint8 images); an image of that size is read as it is. Map operations "
          "(random_crop, random_flip, normalize, ...) apply after.")
          .shaped(R"({"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2})")
          .shown_when(is_image_folder),
      field<&DataSourceSpec::color_mode>(
          "color_mode",
          "image_folder: rgb (3 channels), grayscale (1) or rgba (4; a JPEG is opaque); images are converted as "
          "needed.")
          .shaped(R"({"enum": ["rgb", "grayscale", "rgba"]})")
          .shown_when(is_image_folder),
      field<&DataSourceSpec::tokenizer>(
          "tokenizer",
          "text_folder and csv text columns: how UTF-8 text becomes tokens. word: the text lower-cased (ASCII, "
          "Latin-1, Latin Extended-A, Greek and Cyrillic capitals), then every maximal run of letters, digits and "
          "apostrophes (' or U+2019) is a token, apostrophes at its ends removed; everything else (spaces, "
          "punctuation, symbols) separates (\"Don't STOP -- it's 3pm!\" gives don't, stop, it's, 3pm). A letter is "
          "an ASCII letter or any character above U+007F but Latin-1 punctuation and symbols (U+0080-U+00BF, "
          "U+00D7, U+00F7), general punctuation (U+2000-U+206F) and CJK punctuation (U+3000-U+303F). char: every "
          "Unicode character is a token, as written. sentencepiece: the subword pieces of the SentencePiece model "
          "sentencepiece_model (its normalization and segmentation, e.g. \"▁hello\", \"▁wor\", \"ld\"). The "
          "vocabulary: id 0 <pad>, id 1 <unk> (tokens not in it), then for word and char the tokens of data.train's "
          "training split (its holdout left out) by count, most frequent first, ties by token, for sentencepiece "
          "the model's pieces in its id order; dtrain train saves it with the model (text_folder: "
          "model_dir/token_vocab.json and, for sentencepiece, a copy of the model as model_dir/sentencepiece.model; "
          "csv: model_dir/preprocessing.json), and every later run of that model_dir with a checkpoint (resume, "
          "evaluate, predict) uses the saved one.")
          .shaped(R"({"enum": ["word", "char", "sentencepiece"]})")
          .shown_when(has_text),
      custom<&DataSourceSpec::sentencepiece_model>(
          "sentencepiece_model",
          "tokenizer sentencepiece: the SentencePiece model (.model file) whose pieces are the tokens; train one "
          "from text files with `dtrain data sentencepiece --dir DIR --vocab-size N --out m.model` (or use one "
          "trained by spm_train). Relative paths resolve against the job file's folder.",
          "job_path")
          .shaped(R"({"type": "string", "minLength": 1})")
          .shown_when(uses_sentencepiece),
      field<&DataSourceSpec::max_length>(
          "max_length",
          "text_folder and csv text columns: token ids per example (per text column): the text's first max_length "
          "tokens, padded with <pad> (id 0) after its end. text_folder's features are [max_length] int32 ids "
          "(model.input: {shape: [max_length], dtype: int32}). Required for text_folder and for a csv text column.")
          .min(1)
          .shown_when(has_text)
          .documented_default("null"),
      field<&DataSourceSpec::max_tokens>(
          "max_tokens",
          "text_folder and csv text columns, tokenizer word or char: the most ids of the vocabulary, <pad> and "
          "<unk> included (as Keras' TextVectorization): the max_tokens - 2 most frequent tokens are kept, the "
          "others read as <unk>; null means every token of data.train's training split.")
          .min(3)
          .shown_when(has_text),
      field<&DataSourceSpec::min_count>(
          "min_count",
          "text_folder and csv text columns, tokenizer word or char: a token seen fewer times than this in "
          "data.train's training split is not in the vocabulary (it reads as <unk>).")
          .min(1)
          .shown_when(has_text),
      field_struct<&DataSourceSpec::synthetic>(
          "synthetic", "synthetic: random examples with a fixed seed (for tests and benchmarks).", synthetic_fields),
      field_struct<&DataSourceSpec::synthetic_sequence>(
          "synthetic_sequence",
          "synthetic_sequence: seeded token sequences of a task that needs the order of the tokens (for tests and "
          "samples of sequence models). Example i depends only on (seed, i). Features are sequence_length token ids "
          "(float32); tasks: is_sorted (label 1 when the ids do not decrease, else 0; each example's tokens are drawn "
          "first, at least two distinct values, then put in sorted order or an unsorted random order with probability "
          "1/2 each, so the multiset of tokens says nothing about the label and a model of the token counts alone is "
          "at chance, 50%); reverse (labels [sequence_length]: the ids in reverse order, vocab_size classes per "
          "position).",
          synthetic_sequence_fields)
          .shown_when(
              [](const void* o) { return static_cast<const DataSourceSpec*>(o)->format == "synthetic_sequence"; }),
      field<&DataSourceSpec::batch_size>("batch_size", "Global batch of one step of one worker.")
          .min(1)
          // batch_size_per_replica replaces it: writing both would not load back.
          .shown_when([](const void* o) { return !static_cast<const DataSourceSpec*>(o)->batch_size_per_replica; }),
      field<&DataSourceSpec::batch_size_per_replica>("batch_size_per_replica",
                                                     "Batch per replica instead of batch_size (the global batch is "
                                                     "this times the replicas); null means use batch_size.")
          .min(1),
      field<&DataSourceSpec::shuffle>("shuffle", "Shuffle buffer size; 0 means no shuffling.").min(0),
      field<&DataSourceSpec::seed>("seed", "Shuffle seed; null means run.seed.").min(0),
      field<&DataSourceSpec::repeat>(
          "repeat",
          "Repeat the input forever. The default is true for data.train and false for data.eval and data.predict."),
      field<&DataSourceSpec::drop_remainder>("drop_remainder",
                                             "Drop the last batch when it is smaller than the batch size."),
      field<&DataSourceSpec::scale>("scale", "Features are multiplied by scale (1/255 is typical for idx pixels)."),
      field<&DataSourceSpec::skip>("skip", "Examples skipped at the start.").min(0),
      field<&DataSourceSpec::take>("take", "Use at most this many examples (after skip); null means all.").min(0),
      field<&DataSourceSpec::prefetch>("prefetch", "Batches prepared ahead on a background thread; 0 means none.")
          .min(0),
      field<&DataSourceSpec::shard>(
          "shard",
          "How workers of a multi-worker job split the examples: data (and auto, the default) has every worker compute "
          "the same order of all examples (skip, take, interleave, shuffle) in global batches of workers x batch_size "
          "and take its own rows of each, so the cluster trains exactly as one process with the global batch; file "
          "gives worker i the files i, i+n, ... in its own order (an error when there are fewer files than workers; "
          "the workers then see different examples than one process would); off gives every worker all examples. One "
          "worker reads everything whatever this says.")
          .shaped(R"({"enum": ["auto", "file", "data", "off"]})"),
      field_optional_struct<&DataSourceSpec::interleave>(
          "interleave",
          "Read the files cycle_length at a time, block_length examples from each in turn; an exhausted file's slot "
          "takes the next file when its turn comes (tf.data's deterministic interleave). null means the files one "
          "after another.",
          interleave_fields),
      custom<&DataSourceSpec::map>(
          "map",
          "Operations applied in order to each example as its batch is gathered (after scale); each entry has one key. "
          "{normalize: {mean: [..], std: [..]}}: (x - mean) / std per channel (the last dimension; one value applies "
          "to all). {cast: uint8|int8|int32}: features saturated to the type's range, then truncated toward zero "
          "(tf.saturate_cast); they stay floats and NaN becomes 0. {one_hot: {depth: N}}: class-id labels become "
          "N-vectors (a label outside 0..N-1 is an error). Image augmentation, for images [H, W] or [H, W, C]: "
          "{random_crop: {padding: P}} pads with P zeros on each side and crops back to H x W at a random offset; "
          "{random_flip: horizontal} mirrors left-right with probability 1/2; {random_brightness: {max_delta: d}} adds "
          "one uniform draw from [-d, d) to every value; {random_contrast: {lower: a, upper: b}} scales each channel's "
          "deviation from its mean by one uniform draw from [a, b); {random_resized_crop: {size: [h, w], scale: [0.08, "
          "1.0], ratio: [0.75, 1.3333]}} picks a window as torchvision's RandomResizedCrop (10 tries of a random area "
          "fraction in scale and log-uniform aspect ratio width/height in ratio, else the central crop clamped to "
          "ratio) and resizes it to h x w; {resize_center_crop: {resize: 256, size: [224, 224]}} resizes the shorter "
          "side to resize (the longer to int(resize * long / short)) and keeps the central h x w window, for "
          "evaluation. Both resize bilinearly with half-pixel centres and no antialiasing (torchvision's "
          "antialias=False), round to whole pixel values 0..255 and change the feature shape to [h, w, C]; they need "
          "pixels 0..255 (data scale 1), so put normalize after them. The draws depend only on the seed, the epoch and "
          "the example index, so a resumed run, and any num_parallel_calls, see the same examples.",
          "map_ops"),
      custom<&DataSourceSpec::num_parallel_calls>(
          "num_parallel_calls",
          "Threads that decode the records of tfrecord files when the source loads, and that gather and map the "
          "examples of a batch; auto means the process's thread count (run.threads, --threads, OMP_NUM_THREADS or the "
          "thread budget), at most 8. The batches and the examples in them come in the same order whatever this is.",
          "auto_int")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "integer", "minimum": 1}]})"),
      custom<&DataSourceSpec::stream>(
          "stream",
          "Streaming reads, decodes and batches the records as training goes instead of loading the whole data set, "
          "holding only the open files, the shuffle buffer (of encoded records) and the prefetched batches; format "
          "tfrecord streams. With shuffle > 1 the file order is shuffled each epoch before the interleave and the "
          "shuffle buffer; example ids are (file number << 40 | record number). Checkpoints keep the exact position "
          "(file order, each open file's byte offset, the shuffle buffer as record references, the draw counter), so a "
          "resumed run sees exactly the examples of the uninterrupted run without re-reading the epoch. Streaming does "
          "not do skip, take, several model inputs or int32 ids. auto: tfrecord streams unless the job uses one of "
          "those (then it is read whole), also with cache: memory (which keeps the encoded records, not the decoded "
          "data set); the other formats are read whole (image_folder holds its file list and decodes each batch's "
          "images). The "
          "decision depends on the job alone, never on sizes, so every worker and every restart reads in the same "
          "order; start-up says it in one line with the files' size on disk and the memory available (the "
          "smaller of MemAvailable and the room under the cgroup's memory limit), and warns when data read whole may "
          "not fit. true: stream (an error for the other formats and for the uses above); false: read the whole data "
          "set into memory (decoded as float32), in a different order than streaming when shuffled. text_folder: "
          "true reads and tokenizes each batch's files as training goes, holding only their paths; false holds every "
          "file's token ids; auto reads as training goes when the files' size on disk is more than a quarter of the "
          "memory available (the examples and their order are the same either way, so here sizes may decide). csv "
          "likewise: true reads each batch's rows back from the file as training goes (pread), holding only where "
          "each row starts and its label; false holds the columns compactly (a number per cell, category and token "
          "ids) and encodes each batch's features; auto reads as training goes when the file is more than a quarter "
          "of the memory available; a gzip file is always held (true is an error for it). Fitting (fills, "
          "vocabularies, class names) takes one pass of aggregates either way.",
          "auto_bool")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "boolean"}]})"),
      field<&DataSourceSpec::max_buffer_mb>(
          "max_buffer_mb",
          "Streamed input: the most the input pipeline may hold, in MiB: the decoded batches (prefetch + 2) and the "
          "open files' read buffers are counted when the job starts (too many is an error then), the shuffle buffer's "
          "encoded records as they arrive (training stops with an error naming the sizes when they would exceed the "
          "rest). null means no cap.")
          .min(1),
      field<&DataSourceSpec::cache>(
          "cache",
          "Streamed input: memory keeps each file's encoded records once it has been read to its end, and later epochs "
          "read them from memory instead of the file (for data sets whose encoded bytes fit: start-up warns when the "
          "files are more than half the memory available; the cache counts against max_buffer_mb, and going over it "
          "stops training with an error). The order and the examples are the same either way. none reads the files "
          "every epoch. A source read whole (stream: false, or auto with skip or take) holds the decoded data set in "
          "memory already: memory is an error there.")
          .shaped(R"({"enum": ["none", "memory"]})"),
  };
  return kFields;
}

std::span<const Field> data_fields() {
  static const Field kFields[] = {
      placed<&DataSourceSpec::where>(
          field_optional_struct<&DataSpec::train>(
              "train", "Training input (a data source, see below); null means none.", data_source_fields)
              .hidden_at_default()
              .follows("data_source")),
      placed<&DataSourceSpec::where>(
          field_optional_struct<&DataSpec::eval>("eval", "Evaluation input (a data source); null means none.",
                                                 data_source_fields)
              .hidden_at_default()
              .follows("data_source")
              .made_by(evaluation_source)),
      placed<&DataSourceSpec::where>(
          field_optional_struct<&DataSpec::predict>(
              "predict",
              "Prediction input (a data source); null means none (dtrain predict usually takes --input instead).",
              data_source_fields)
              .hidden_at_default()
              .follows("data_source")
              .made_by(evaluation_source)),
  };
  return kFields;
}

const char* data_source_schema_extra() {
  return R"({"description": "One input: where examples come from and how they are batched.", "allOf": [{"if": {"properties": {"format": {"const": "idx"}}, "required": ["format"]}, "then": {"required": ["images", "labels"]}}, {"if": {"properties": {"format": {"const": "csv"}}, "required": ["format"]}, "then": {"required": ["path"]}}, {"if": {"properties": {"format": {"const": "tfrecord"}}, "required": ["format"]}, "then": {"required": ["files", "features", "label_feature"]}}, {"if": {"properties": {"format": {"const": "npy"}}, "required": ["format"]}, "then": {"required": ["images", "labels"]}}, {"if": {"properties": {"format": {"const": "npz"}}, "required": ["format"]}, "then": {"required": ["path"]}}, {"if": {"properties": {"format": {"const": "text"}}, "required": ["format"]}, "then": {"required": ["files", "sequence_length"]}}, {"if": {"properties": {"format": {"const": "image_folder"}}, "required": ["format"]}, "then": {"required": ["dir"]}}, {"if": {"properties": {"format": {"const": "text_folder"}}, "required": ["format"]}, "then": {"required": ["dir", "max_length"]}}]})";
}

}  // namespace dtrain
