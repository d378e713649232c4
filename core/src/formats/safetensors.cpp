// safetensors.cpp: the .safetensors reader (memory-mapped file or bytes in
// memory), its header checks, F16/BF16 conversion, and sharded checkpoints.
#include "attnscope/formats/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "attnscope/formats/files.hpp"
#include "formats/formats_internal.hpp"

namespace attnscope::core {

using detail::fail;
using detail::half_to_float;
using json = nlohmann::json;

// The bytes of a file: a read-only mapping, or a string kept in memory.
struct SafetensorsFile::Storage {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  void* mapping = nullptr;  // munmap'ed by the destructor when set
  std::string owned;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (mapping) ::munmap(mapping, size);
  }
};

std::uint64_t TensorInfo::elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;  // checked against overflow when parsed
  return n;
}

std::size_t safetensors_dtype_size(std::string_view dtype) {
  static const std::pair<std::string_view, std::size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8},
  };
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return 0;
}

namespace {

// The header's JSON nests three levels ({name: {shape: [...]}}); deeper
// input is refused while parsing, before it is built.
constexpr int kMaxHeaderDepth = 3;

std::uint64_t read_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses the header JSON; a duplicate key (anywhere) or nesting deeper than
// the format has is refused by name.
json parse_header_json(std::string_view text, std::string_view source) {
  std::vector<std::set<std::string>> keys;  // one per open object
  std::string duplicate;
  bool too_deep = false;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        [[fallthrough]];
      case json::parse_event_t::array_start:
        if (depth >= kMaxHeaderDepth) too_deep = true;
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    if (too_deep)
      throw ParseError(std::string(source) + ": header nests deeper than " +
                       std::to_string(kMaxHeaderDepth) + " levels");
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    fail(source, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!duplicate.empty())
    fail(source, "header has the key \"" + duplicate + "\" twice (each tensor must appear once)");
  return doc;
}

std::uint64_t unsigned_of(const json& v, std::string_view source, const std::string& what) {
  if (!v.is_number_unsigned()) fail(source, what + " is not a non-negative whole number");
  return v.get<std::uint64_t>();
}

TensorInfo parse_entry(const std::string& name, const json& v, std::string_view source) {
  const std::string where = "tensor \"" + name + "\"";
  if (!v.is_object()) fail(source, where + " is not an object with dtype, shape, data_offsets");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(source, where + " lacks \"" + key + "\"");
  TensorInfo t;
  t.name = name;
  if (!v["dtype"].is_string()) fail(source, where + ": \"dtype\" is not a string");
  t.dtype = v["dtype"].get<std::string>();
  const std::size_t size = safetensors_dtype_size(t.dtype);
  if (size == 0) fail(source, where + " has the unknown dtype \"" + t.dtype + "\"");
  if (!v["shape"].is_array()) fail(source, where + ": \"shape\" is not an array");
  std::uint64_t bytes = size;
  bool overflow = false;
  for (const json& d : v["shape"]) {
    t.shape.push_back(unsigned_of(d, source, where + ": a \"shape\" entry"));
    overflow = overflow || __builtin_mul_overflow(bytes, t.shape.back(), &bytes);
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(source, where + ": \"data_offsets\" is not [begin, end]");
  t.begin = unsigned_of(off[0], source, where + ": data_offsets begin");
  t.end = unsigned_of(off[1], source, where + ": data_offsets end");
  if (t.begin > t.end)
    fail(source, where + ": data_offsets begin " + std::to_string(t.begin) + " is after end " +
                     std::to_string(t.end));
  if (overflow) fail(source, where + ": the shape's byte size overflows 64 bits");
  if (bytes != t.end - t.begin)
    fail(source, where + ": shape and dtype " + t.dtype + " need " + std::to_string(bytes) +
                     " bytes, data_offsets give " + std::to_string(t.end - t.begin));
  return t;
}

// Ranges inside the buffer and not overlapping (empty tensors overlap nothing).
void check_ranges(std::vector<TensorInfo>& tensors, std::uint64_t buffer_size,
                  std::string_view source) {
  for (const TensorInfo& t : tensors)
    if (t.end > buffer_size)
      fail(source, "tensor \"" + t.name + "\" ends at byte " + std::to_string(t.end) +
                       ", past the buffer's " + std::to_string(buffer_size) +
                       " bytes (file truncated?)");
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : tensors)
    if (t.end > t.begin) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (std::size_t k = 1; k < order.size(); ++k)
    if (order[k]->begin < order[k - 1]->end)
      fail(source, "tensors \"" + order[k - 1]->name + "\" and \"" + order[k]->name +
                       "\" overlap in the buffer");
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
}

}  // namespace

SafetensorsFile SafetensorsFile::from_storage(std::shared_ptr<const Storage> storage,
                                              std::string source) {
  SafetensorsFile f;
  f.storage_ = std::move(storage);
  f.source_ = std::move(source);
  const std::string_view src = f.source_;
  const std::size_t size = f.storage_->size;
  if (size < 8)
    fail(src, "is not a safetensors file: " + std::to_string(size) +
                  " bytes, shorter than the 8-byte header length");
  const std::uint64_t n = read_le64(f.storage_->data);
  if (n > kMaxSafetensorsHeaderBytes)
    fail(src, "header length " + std::to_string(n) + " is over the 100 MB limit");
  if (n > size - 8)
    fail(src, "header length " + std::to_string(n) + " runs past the file's end (" +
                  std::to_string(size) + " bytes): not a safetensors file, or truncated");
  const std::string_view text(reinterpret_cast<const char*>(f.storage_->data) + 8, n);
  if (text.empty() || text.front() != '{')
    fail(src, "header does not start with '{' (not a safetensors file)");
  const json doc = parse_header_json(text, src);
  if (!doc.is_object()) fail(src, "header is not a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(src, "\"__metadata__\" is not an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail(src, "\"__metadata__\" entry \"" + mk + "\" is not a string");
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.tensors_.push_back(parse_entry(key, value, src));
  }
  f.buffer_offset_ = 8 + n;
  check_ranges(f.tensors_, size - f.buffer_offset_, src);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, std::string source) {
  auto storage = std::make_shared<Storage>();
  storage->owned = std::move(bytes);
  storage->data = reinterpret_cast<const unsigned char*>(storage->owned.data());
  storage->size = storage->owned.size();
  return from_storage(std::move(storage), std::move(source));
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string source = path.string();
  const int fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(source, std::string("cannot open (") + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(source, "is not a regular file");
  }
  auto storage = std::make_shared<Storage>();
  storage->size = static_cast<std::size_t>(st.st_size);
  if (storage->size > 0) {
    void* m = ::mmap(nullptr, storage->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(source, std::string("cannot map into memory (") + std::strerror(err) + ")");
    }
    storage->mapping = m;
    storage->data = static_cast<const unsigned char*>(m);
  }
  ::close(fd);
  return from_storage(std::move(storage), source);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name,
                       [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const TensorInfo& SafetensorsFile::info(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  fail(source_, "has no tensor \"" + std::string(name) + "\"");
}

std::span<const unsigned char> SafetensorsFile::bytes_of(const TensorInfo& t) const {
  return {storage_->data + buffer_offset_ + t.begin, static_cast<std::size_t>(t.end - t.begin)};
}

std::span<const float> SafetensorsFile::f32(std::string_view name) const {
  const TensorInfo& t = info(name);
  if (t.dtype != "F32")
    fail(source_, "tensor \"" + t.name + "\" is " + t.dtype + ", not F32 (read it with values())");
  const auto bytes = bytes_of(t);
  if (bytes.empty()) return {};
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(float) != 0)
    fail(source_, "tensor \"" + t.name + "\" is not 4-byte aligned in the file");
  return {reinterpret_cast<const float*>(bytes.data()), bytes.size() / sizeof(float)};
}

std::span<const std::uint16_t> SafetensorsFile::bf16(std::string_view name) const {
  const TensorInfo& t = info(name);
  if (t.dtype != "BF16") return {};
  const auto bytes = bytes_of(t);
  if (bytes.empty() || reinterpret_cast<std::uintptr_t>(bytes.data()) % 2 != 0) return {};
  return {reinterpret_cast<const std::uint16_t*>(bytes.data()), bytes.size() / 2};
}

void SafetensorsFile::release(std::string_view name) const {
  if (!storage_->mapping) return;
  const auto bytes = bytes_of(info(name));
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(bytes.data()) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size())) / page * page;
  // Advice only: when the kernel declines, the pages just stay resident.
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::vector<float> SafetensorsFile::values(std::string_view name) const {
  const TensorInfo& t = info(name);
  const auto bytes = bytes_of(t);
  const unsigned char* p = bytes.data();
  std::vector<float> out;
  if (t.dtype == "F32") {
    out.resize(bytes.size() / 4);
    for (std::size_t i = 0; i < out.size(); ++i, p += 4)
      out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(p[0] | p[1] << 8 | p[2] << 16) |
                                    static_cast<std::uint32_t>(p[3]) << 24);
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    const bool bf16 = t.dtype == "BF16";
    out.resize(bytes.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i, p += 2) {
      const auto h = static_cast<std::uint16_t>(p[0] | p[1] << 8);
      out[i] = bf16 ? std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16) : half_to_float(h);
    }
  } else {
    fail(source_, "tensor \"" + t.name + "\" has dtype " + t.dtype +
                      ", which attnscope does not read (only F32, F16, BF16)");
  }
  return out;
}

RowMatrix SafetensorsFile::matrix(std::string_view name) const {
  const TensorInfo& t = info(name);
  return detail::folded_matrix(t.shape, values(name), source_, t.name);
}

SafetensorsShards SafetensorsShards::open(const std::filesystem::path& index_path) {
  SafetensorsShards s;
  s.source_ = index_path.string();
  const std::string_view src = s.source_;
  const std::string text = read_text_file(s.source_);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    fail(src, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
    fail(src, "has no \"weight_map\" object (tensor name -> shard file)");
  std::map<std::string, std::size_t> shard_index;  // file name -> shards_ position
  for (const auto& [name, file] : doc["weight_map"].items()) {
    if (!file.is_string()) fail(src, "weight_map entry \"" + name + "\" is not a shard file name");
    const std::string shard = file.get<std::string>();
    const std::filesystem::path rel(shard);
    if (shard.empty() || rel.is_absolute() || rel.filename() != rel)
      fail(src, "weight_map entry \"" + name + "\" names \"" + shard +
                    "\": a shard must be a file name in the index's folder");
    auto [it, added] = shard_index.emplace(shard, s.shards_.size());
    if (added) {
      try {
        s.shards_.push_back(SafetensorsFile::open(index_path.parent_path() / rel));
      } catch (const ParseError& e) {
        fail(src, std::string("shard \"") + shard + "\": " + e.what());
      }
    }
    if (!s.shards_[it->second].find(name))
      fail(src, "tensor \"" + name + "\" is not in its shard \"" + shard + "\"");
    s.where_.emplace(name, it->second);
  }
  return s;
}

std::vector<std::string> SafetensorsShards::names() const {
  std::vector<std::string> out;
  for (const auto& [name, shard] : where_) out.push_back(name);
  return out;
}

const SafetensorsFile& SafetensorsShards::shard_of(std::string_view name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) fail(source_, "has no tensor \"" + std::string(name) + "\"");
  return shards_[it->second];
}

}  // namespace attnscope::core
