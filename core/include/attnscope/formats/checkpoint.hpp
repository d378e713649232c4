// checkpoint.hpp: a checkpoint's named tensors, whatever file holds them.
//
// The model loader reads tensors by name through this one interface: a
// .safetensors file, a sharded model.safetensors.index.json, or a PyTorch
// .pth state_dict. Every tensor reads as float32 (F16 and BF16 widened);
// F32 tensors of a mapped file can be read where they lie (f32_in_place).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/base/matrix.hpp"

namespace attnscope::core {

class TensorFile {
 public:
  virtual ~TensorFile() = default;
  // The file's path, for messages.
  virtual const std::string& source() const = 0;
  // Every tensor name, sorted.
  virtual std::vector<std::string> names() const = 0;
  // The shape of tensor `name` (C order), or nullopt when there is none.
  virtual std::optional<std::vector<std::uint64_t>> shape(std::string_view name) const = 0;
  // Its dtype in safetensors spelling ("F32", "F16", "BF16", ...).
  virtual std::string dtype(std::string_view name) const = 0;
  // Its values as float32 in C order, leading dimensions folded into rows
  // ([n] is 1 x n). Throws ParseError naming the file for a missing tensor
  // or a dtype that is not a floating-point one.
  virtual RowMatrix matrix(std::string_view name) const = 0;
  // An F32 tensor's elements where they lie in a mapped file, or an empty
  // span when it is not stored that way (then read matrix()).
  virtual std::span<const float> f32_in_place(std::string_view name) const {
    (void)name;
    return {};
  }
  // A BF16 tensor's bits where they lie in a mapped file, or an empty span
  // when it is not stored that way (then read matrix()).
  virtual std::span<const std::uint16_t> bf16_in_place(std::string_view name) const {
    (void)name;
    return {};
  }
  // The caller is done with `name`'s bytes (a hint; see SafetensorsFile::release).
  virtual void release(std::string_view name) const { (void)name; }
};

// Opens `path` by its name: *.safetensors, *.index.json (shards), *.pth /
// *.pt / *.bin (a PyTorch zip). Throws ParseError naming the file.
std::unique_ptr<TensorFile> open_tensor_file(const std::filesystem::path& path);

}  // namespace attnscope::core
