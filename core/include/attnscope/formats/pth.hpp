// pth.hpp: PyTorch .pth checkpoints as torch.save writes them (PyTorch >= 1.6),
// read without Python.
//
// The book (ch. 5) saves a model with torch.save(model.state_dict(), PATH) and
// a training checkpoint with torch.save({"model_state_dict": ...,
// "optimizer_state_dict": ...}, PATH). Either is a zip archive (entries
// stored, not compressed) holding <archive>/data.pkl, a pickle (protocol 2)
// of the dict, and <archive>/data/<key>, one raw little-endian storage per
// key. Each tensor in the pickle is torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, ...), where storage is a persistent id
// ('storage', torch.FloatStorage, key, location, numel): a tensor is a strided
// view into its storage, and several tensors may share one.
//
// The pickle is run by a small machine that knows only the opcodes and the
// callables a state_dict uses (collections.OrderedDict, the tensor and
// parameter rebuilders, the storage types); any other callable is refused by
// name before anything is built, so no file can make it do more than build
// dicts, lists, tuples and tensors. Every check happens when the file is
// opened (docs/file-formats.md): a bad file throws ParseError naming the file
// and the problem, and no read leaves a storage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/errors.hpp"
#include "attnscope/base/matrix.hpp"

struct zip;  // libzip's archive handle (zip_t)

namespace attnscope::core {

// The largest data.pkl accepted (a GPT-2 state_dict's is ~50 KB).
inline constexpr std::uint64_t kMaxPthPickleBytes = 1ull << 30;

// One tensor of the state_dict: a strided view into a storage.
struct PthTensor {
  std::string name;
  std::string dtype;                 // safetensors spelling: "F32", "F16", "BF16", "I64", ...
  std::vector<std::uint64_t> shape;  // {} is a scalar
  std::vector<std::int64_t> stride;  // in elements, one per dimension
  std::uint64_t storage_offset = 0;  // in elements
  std::string storage_key;           // the storage's file: <archive>/data/<key>
  std::uint64_t elements() const;    // product of shape (1 for a scalar)
};

// One opened .pth file (or bytes parsed from memory). The storages the
// state_dict's tensors use are read into memory when it is opened; copies
// share them.
class PthFile {
 public:
  // Reads the archive and checks its pickle and storages; throws ParseError
  // naming `path` when it cannot be read or is not a state_dict .pth file.
  static PthFile open(const std::filesystem::path& path);
  // The same checks over bytes in memory; `source` names them in errors. The
  // fuzz target and the tests enter here.
  static PthFile parse(std::string bytes, std::string source);

  const std::string& source() const { return source_; }
  // Which dict was used: "" for a bare state_dict, "model_state_dict" for a
  // training checkpoint (its other entries, e.g. the optimizer's, are skipped).
  const std::string& dict_key() const { return dict_key_; }
  // The state_dict's tensors, sorted by name.
  const std::vector<PthTensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or nullptr.
  const PthTensor* find(std::string_view name) const;
  // The tensor called `name`; throws ParseError naming the file and the
  // tensor when absent.
  const PthTensor& info(std::string_view name) const;

  // An F32, F16, BF16 or F64 tensor's elements in C order as float32,
  // gathered through its stride and storage offset; other dtypes throw
  // ParseError naming the dtype.
  std::vector<float> values(std::string_view name) const;
  // values() as a matrix: a scalar is 1 x 1, shape [n] is 1 x n, [r, c] is
  // r x c, and [a, ..., y, z] is (a*...*y) x z (leading dimensions folded
  // into rows).
  RowMatrix matrix(std::string_view name) const;

 private:
  using Bytes = std::vector<unsigned char>;
  // Reads and checks everything from an open archive (closed by the caller)
  // of `archive_bytes` bytes.
  static PthFile load(::zip* archive, std::uint64_t archive_bytes, std::string source);

  std::string source_;
  std::string dict_key_;
  std::vector<PthTensor> tensors_;
  // Storage key -> its bytes (only the storages the tensors use).
  std::map<std::string, std::shared_ptr<const Bytes>, std::less<>> storages_;
};

}  // namespace attnscope::core
