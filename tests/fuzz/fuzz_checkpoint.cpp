// Checkpoints as dtrain reads them back: the safetensors file (JSON header,
// dtypes, offsets) through decode_safetensors and load_checkpoint (then
// described as `dtrain checkpoint` shows it), and the model_dir's checkpoint
// index (the JSON list of kept checkpoints) with the scan that falls back
// on the file names. Selector byte: even a safetensors file, odd the index.
// Data errors only, never a throw; a bad index is ignored (as documented:
// the directory is scanned instead).
#include <filesystem>
#include <string>

#include "engine/io/checkpoint.hpp"
#include "engine/io/checkpoint_index.hpp"
#include "engine/io/safetensors.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace dtrain;
using namespace dtrain::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t selector = fuzz::take_selector(input);
  if (selector % 2 == 0) {
    auto decoded = decode_safetensors(input, "fuzz.safetensors");
    fuzz::expect_ok_or(decoded, ErrorKind::kData, "decode_safetensors");
    if (decoded.ok()) (void)describe_checkpoint(*decoded);
    const std::string path = fuzz::write_scratch("model.ckpt-7.safetensors", input);
    fuzz::expect_ok_or(load_checkpoint(path), ErrorKind::kData, "load_checkpoint");
  } else {
    const std::filesystem::path dir = fuzz::scratch_dir() / "model_dir";
    std::filesystem::create_directories(dir);
    fuzz::write_scratch(std::string("model_dir/") + kIndexFileName, input);
    (void)read_checkpoint_index(dir.string());
    (void)read_keep_hours_since(dir.string());
    (void)kept_checkpoints(dir.string());
    (void)latest_checkpoint(dir.string());
  }
  return 0;
}
