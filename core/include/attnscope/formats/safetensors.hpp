// safetensors.hpp: Hugging Face .safetensors checkpoints, read in place.
//
// A file is an 8-byte little-endian u64 N, then N bytes of JSON naming every
// tensor ({"name": {"dtype": "F32", "shape": [r, c], "data_offsets":
// [begin, end]}, "__metadata__": {"k": "v"}}; trailing spaces allowed), then
// the byte buffer the offsets point into (C order, little-endian). The file
// is memory-mapped read-only: F32 tensors are used where they lie (f32()),
// F16 and BF16 are converted to float32 on request (matrix(), values()).
// Every other dtype the format defines is listed but refused by name when
// read. Every check happens when the file is opened (docs/file-formats.md):
// a bad file throws ParseError naming the file and the problem, and no read
// ever leaves the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/errors.hpp"
#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

// The largest header accepted (the JSON between the length and the buffer).
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull * 1000 * 1000;

// One tensor as the header describes it.
struct TensorInfo {
  std::string name;
  std::string dtype;                 // "F32", "F16", "BF16", "I64", ...
  std::vector<std::uint64_t> shape;  // C order; {} is a scalar
  std::uint64_t begin = 0;           // byte range in the buffer: [begin, end)
  std::uint64_t end = 0;
  std::uint64_t elements() const;  // product of shape (1 for a scalar)
};

// Bytes per element of a safetensors dtype name; 0 when it is not one.
std::size_t safetensors_dtype_size(std::string_view dtype);

// One opened .safetensors file (or bytes parsed from memory). Copies share
// the mapping; spans from f32() stay valid while any copy lives.
class SafetensorsFile {
 public:
  // Maps the file read-only and checks its header; throws ParseError naming
  // `path` when it cannot be read or is not a valid safetensors file.
  static SafetensorsFile open(const std::filesystem::path& path);
  // The same checks over bytes in memory (kept by the object); `source`
  // names them in errors. The fuzz target and the tests enter here.
  static SafetensorsFile parse(std::string bytes, std::string source);

  const std::string& source() const { return source_; }
  // Every tensor, sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The "__metadata__" strings (empty when there are none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor called `name`, or nullptr.
  const TensorInfo* find(std::string_view name) const;
  // The tensor called `name`; throws ParseError naming the file when absent.
  const TensorInfo& info(std::string_view name) const;

  // An F32 tensor's elements in C order, where they lie in the file (no
  // copy). Throws ParseError for other dtypes (use values()/matrix()) and
  // when the data is not 4-byte aligned in the file.
  std::span<const float> f32(std::string_view name) const;
  // A BF16 tensor's elements (bfloat16 bits, little-endian) where they lie
  // in the file (no copy), or an empty span for another dtype or data not
  // 2-byte aligned in the file.
  std::span<const std::uint16_t> bf16(std::string_view name) const;
  // An F32, F16 or BF16 tensor's elements in C order as float32 (F16
  // subnormals, infinities and NaNs kept); other dtypes throw ParseError
  // naming the dtype.
  std::vector<float> values(std::string_view name) const;
  // values() as a matrix: a scalar is 1 x 1, shape [n] is 1 x n, [r, c] is
  // r x c, and [a, ..., y, z] is (a*...*y) x z (leading dimensions folded
  // into rows).
  RowMatrix matrix(std::string_view name) const;
  // Tells the kernel that the tensor's bytes will not be read again soon
  // (after they were copied elsewhere): its whole pages leave this process's
  // resident memory and are read from the file again if touched. Reading
  // stays valid. Does nothing for bytes parsed from memory.
  void release(std::string_view name) const;

 private:
  struct Storage;
  static SafetensorsFile from_storage(std::shared_ptr<const Storage> storage, std::string source);
  std::span<const unsigned char> bytes_of(const TensorInfo& t) const;

  std::shared_ptr<const Storage> storage_;
  std::string source_;
  std::uint64_t buffer_offset_ = 0;  // 8 + N
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A checkpoint split into shards: model.safetensors.index.json
// ({"weight_map": {"tensor name": "shard file name"}, "metadata": {...}})
// next to its shards. One lookup by tensor name over every shard.
class SafetensorsShards {
 public:
  // Reads the index, opens every shard it names (relative to the index's
  // folder) and checks that each shard holds the tensors the index puts in
  // it. Throws ParseError naming the index (and the shard, for a shard's
  // problem).
  static SafetensorsShards open(const std::filesystem::path& index_path);

  const std::string& source() const { return source_; }
  // Every tensor name of the weight map, sorted.
  std::vector<std::string> names() const;
  // The shard holding `name`; throws ParseError naming the index when absent.
  const SafetensorsFile& shard_of(std::string_view name) const;
  const TensorInfo& info(std::string_view name) const { return shard_of(name).info(name); }
  std::span<const float> f32(std::string_view name) const { return shard_of(name).f32(name); }
  std::span<const std::uint16_t> bf16(std::string_view name) const {
    return shard_of(name).bf16(name);
  }
  std::vector<float> values(std::string_view name) const { return shard_of(name).values(name); }
  RowMatrix matrix(std::string_view name) const { return shard_of(name).matrix(name); }
  void release(std::string_view name) const { shard_of(name).release(name); }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

 private:
  std::string source_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, std::size_t, std::less<>> where_;  // tensor name -> shard
};

}  // namespace attnscope::core
