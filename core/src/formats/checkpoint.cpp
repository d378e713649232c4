// checkpoint.cpp: TensorFile over each checkpoint format.
#include "attnscope/formats/checkpoint.hpp"

#include <algorithm>

#include "attnscope/base/errors.hpp"
#include "attnscope/formats/pth.hpp"
#include "attnscope/formats/safetensors.hpp"

namespace attnscope::core {

namespace {

// One .safetensors file, or the shards of an index: both answer by name.
template <typename File>
class SafetensorsTensors final : public TensorFile {
 public:
  explicit SafetensorsTensors(File file) : file_(std::move(file)) {}
  const std::string& source() const override { return file_.source(); }
  std::vector<std::string> names() const override {
    if constexpr (std::is_same_v<File, SafetensorsShards>) {
      return file_.names();
    } else {
      std::vector<std::string> out;
      for (const TensorInfo& t : file_.tensors()) out.push_back(t.name);
      return out;
    }
  }
  std::optional<std::vector<std::uint64_t>> shape(std::string_view name) const override {
    const TensorInfo* t = find(name);
    if (!t) return std::nullopt;
    return t->shape;
  }
  std::string dtype(std::string_view name) const override { return file_.info(name).dtype; }
  RowMatrix matrix(std::string_view name) const override { return file_.matrix(name); }
  std::span<const float> f32_in_place(std::string_view name) const override {
    const TensorInfo* t = find(name);
    if (!t || t->dtype != "F32") return {};
    return file_.f32(name);
  }
  std::span<const std::uint16_t> bf16_in_place(std::string_view name) const override {
    const TensorInfo* t = find(name);
    if (!t || t->dtype != "BF16") return {};
    return file_.bf16(name);
  }
  void release(std::string_view name) const override {
    if (find(name)) file_.release(name);
  }

 private:
  const TensorInfo* find(std::string_view name) const {
    if constexpr (std::is_same_v<File, SafetensorsShards>) {
      const auto names = file_.names();
      if (!std::binary_search(names.begin(), names.end(), std::string(name))) return nullptr;
      return &file_.info(name);
    } else {
      return file_.find(name);
    }
  }
  File file_;
};

// A PyTorch state_dict: every tensor is read (and widened) on request.
class PthTensors final : public TensorFile {
 public:
  explicit PthTensors(PthFile file) : file_(std::move(file)) {}
  const std::string& source() const override { return file_.source(); }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const PthTensor& t : file_.tensors()) out.push_back(t.name);
    return out;
  }
  std::optional<std::vector<std::uint64_t>> shape(std::string_view name) const override {
    const PthTensor* t = file_.find(name);
    if (!t) return std::nullopt;
    return t->shape;
  }
  std::string dtype(std::string_view name) const override { return file_.info(name).dtype; }
  RowMatrix matrix(std::string_view name) const override { return file_.matrix(name); }

 private:
  PthFile file_;
};

bool ends_with(const std::string& s, std::string_view suffix) { return s.ends_with(suffix); }

}  // namespace

std::unique_ptr<TensorFile> open_tensor_file(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (ends_with(name, ".index.json"))
    return std::make_unique<SafetensorsTensors<SafetensorsShards>>(SafetensorsShards::open(path));
  if (ends_with(name, ".safetensors"))
    return std::make_unique<SafetensorsTensors<SafetensorsFile>>(SafetensorsFile::open(path));
  if (ends_with(name, ".pth") || ends_with(name, ".pt") || ends_with(name, ".bin"))
    return std::make_unique<PthTensors>(PthFile::open(path));
  throw ParseError(path.string() +
                   ": not a checkpoint attnscope reads (a .safetensors file, a "
                   "model.safetensors.index.json, or a PyTorch .pth state_dict)");
}

}  // namespace attnscope::core
