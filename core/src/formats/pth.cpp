// pth.cpp: the .pth reader: libzip for the archive, the pickle machine
// (pickle.hpp) for data.pkl, and strided reads of the storages.
#include "attnscope/formats/pth.hpp"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "formats/formats_internal.hpp"
#include "formats/pickle.hpp"

namespace attnscope::core {

using detail::fail;
using detail::half_to_float;

namespace {

using pickle::describe;
using pickle::Kind;
using pickle::kind_name;
using pickle::kStorageTypes;
using pickle::Machine;
using pickle::StorageRef;
using pickle::TensorRef;
using pickle::Value;

constexpr std::uint64_t kMaxValuesRead = std::uint64_t{1} << 30;  // elements values() returns
// Deflate expands at most 1032:1; an entry claiming more is not a real one.
constexpr std::uint64_t kMaxDeflateRatio = 1100;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

// Why libzip could not open the bytes as an archive.
[[noreturn]] void fail_open(std::string_view source, zip_error_t* error, const unsigned char* head,
                            std::size_t head_size) {
  const int code = zip_error_code_zip(error);
  std::string why = zip_error_strerror(error);
  zip_error_fini(error);
  if (code == ZIP_ER_NOZIP) {
    if (head_size >= 2 && head[0] == 0x80)
      fail(source,
           "is a legacy torch.save file (a bare pickle, as PyTorch < 1.6 or "
           "_use_new_zipfile_serialization=False write), not a zip archive; re-save it with "
           "torch.save(model.state_dict(), PATH) from PyTorch 1.6 or newer");
    fail(source, "is not a zip archive (or a damaged one), so not a file torch.save wrote");
  }
  fail(source, "is not a readable zip archive (" + why + ")");
}

// One entry's bytes, at most `max_bytes`; stored or deflated only. Sizes are
// checked against the archive's before anything is allocated.
struct Archive {
  zip_t* zip;
  std::uint64_t bytes;  // the archive's size
};
std::vector<unsigned char> read_entry(Archive a, zip_uint64_t index, const std::string& name,
                                      std::uint64_t max_bytes, std::string_view source) {
  zip_t* z = a.zip;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, index, 0, &st) != 0 ||
      (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
          (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
    fail(source, "cannot read the zip entry " + name + " (" + zip_strerror(z) + ")");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    fail(source, "zip entry " + name + " is compressed with method " +
                     std::to_string(st.comp_method) +
                     " (torch.save stores entries uncompressed; deflate is read too)");
  if (st.comp_size > a.bytes || (st.comp_method == ZIP_CM_STORE && st.size != st.comp_size))
    fail(source, "zip entry " + name + " claims " + std::to_string(st.size) + " bytes (" +
                     std::to_string(st.comp_size) + " stored) in a " + std::to_string(a.bytes) +
                     "-byte archive: damaged or truncated");
  if (st.comp_method == ZIP_CM_DEFLATE && st.size / kMaxDeflateRatio > st.comp_size)
    fail(source, "zip entry " + name + " claims " + std::to_string(st.size) + " bytes from " +
                     std::to_string(st.comp_size) + " compressed ones, more than deflate can");
  if (st.size > max_bytes)
    fail(source, "zip entry " + name + " is " + std::to_string(st.size) + " bytes, over the " +
                     std::to_string(max_bytes) + "-byte limit");
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z, index, 0));
  if (!f) fail(source, "cannot read the zip entry " + name + " (" + zip_strerror(z) + ")");
  std::vector<unsigned char> out(static_cast<std::size_t>(st.size));
  std::size_t got = 0;
  while (got < out.size()) {
    const zip_int64_t n = zip_fread(f.get(), out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  unsigned char extra = 0;  // reading to the end makes libzip check the CRC
  if (got != out.size() || zip_fread(f.get(), &extra, 1) != 0)
    fail(source, "zip entry " + name + " is damaged or truncated (" +
                     zip_error_strerror(zip_file_get_error(f.get())) + ")");
  return out;
}

// The entry index of `name`, or -1.
zip_int64_t entry(zip_t* z, const std::string& name) {
  return zip_name_locate(z, name.c_str(), ZIP_FL_ENC_RAW);
}

// "<archive>/" for the one <archive>/data.pkl in the zip.
std::string archive_prefix(zip_t* z, std::string_view source) {
  std::string found;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t k = 0; k < n; ++k) {
    const char* raw = zip_get_name(z, static_cast<zip_uint64_t>(k), ZIP_FL_ENC_RAW);
    if (!raw) continue;
    const std::string_view name(raw);
    if (!name.ends_with("data.pkl")) continue;
    const std::string_view prefix = name.substr(0, name.size() - 8);
    if (!(prefix.empty() || (prefix.back() == '/' && prefix.find('/') == prefix.size() - 1)))
      continue;
    if (!found.empty())
      fail(source, "holds two pickles, " + found + "data.pkl and " + std::string(name) +
                       " (torch.save writes one)");
    found = std::string(prefix);
    if (found.empty()) found = "/";  // marks "found at the top", stripped below
  }
  if (found.empty())
    fail(source, "is a zip archive without <archive>/data.pkl, so not a file torch.save wrote");
  return found == "/" ? std::string() : found;
}

// Elements of the storage a tensor reaches: offset + sum((size-1)*stride) + 1
// (0 for an empty tensor); false on overflow.
bool storage_need(const PthTensor& t, std::uint64_t& need) {
  need = 0;
  for (std::uint64_t d : t.shape)
    if (d == 0) return true;
  std::uint64_t last = t.storage_offset;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    std::uint64_t step = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, static_cast<std::uint64_t>(t.stride[d]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, 1, &need);
}

// The storage holds numel elements of its type, and the tensor's view stays
// inside them.
void check_fits(const PthTensor& t, const StorageRef& st, std::size_t bytes,
                std::string_view source) {
  const std::size_t size = kStorageTypes[st.type].size;
  std::uint64_t declared = 0;
  if (__builtin_mul_overflow(st.numel, size, &declared) || declared != bytes)
    fail(source, "storage \"" + st.key + "\" is " + std::to_string(bytes) +
                     " bytes, but the pickle says it holds " + std::to_string(st.numel) + " " +
                     t.dtype + " elements");
  std::uint64_t need = 0;
  if (!storage_need(t, need) || need > st.numel)
    fail(source, "tensor \"" + t.name + "\" (offset " + std::to_string(t.storage_offset) +
                     ", its shape and stride) reaches past its storage \"" + st.key + "\" of " +
                     std::to_string(st.numel) + " elements");
}

}  // namespace

std::uint64_t PthTensor::elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return UINT64_MAX;
  return n;
}

PthFile PthFile::load(::zip* z, std::uint64_t archive_bytes, std::string source) {
  const Archive archive{z, archive_bytes};
  PthFile f;
  f.source_ = std::move(source);
  const std::string_view src = f.source_;
  const std::string prefix = archive_prefix(z, src);
  if (const zip_int64_t bo = entry(z, prefix + "byteorder"); bo >= 0) {
    const auto order =
        read_entry(archive, static_cast<zip_uint64_t>(bo), prefix + "byteorder", 16, src);
    if (std::string(order.begin(), order.end()) != "little")
      fail(src, "stores its tensors big-endian (" + prefix +
                    "byteorder); attnscope reads little-endian .pth files only");
  }
  const zip_int64_t pkl = entry(z, prefix + "data.pkl");
  if (pkl < 0) fail(src, "cannot find " + prefix + "data.pkl in the archive by name");
  const auto pickle_bytes = read_entry(archive, static_cast<zip_uint64_t>(pkl), prefix + "data.pkl",
                                       kMaxPthPickleBytes, src);
  Machine m(
      std::string_view(reinterpret_cast<const char*>(pickle_bytes.data()), pickle_bytes.size()),
      src);
  const Value top = m.run();

  // The state_dict: the top dict, or its "model_state_dict".
  const char* advice = "; save one with torch.save(model.state_dict(), PATH)";
  if (top.kind != Kind::Dict) fail(src, "is not a state_dict (" + describe(m, top) + ")" + advice);
  Value dict = top;
  const auto& top_items = m.containers[top.index];
  for (std::size_t k = 0; k + 1 < top_items.size(); k += 2)
    if (top_items[k].kind == Kind::Str && m.strings[top_items[k].index] == "model_state_dict") {
      dict = top_items[k + 1];
      f.dict_key_ = "model_state_dict";
    }
  if (dict.kind != Kind::Dict)
    fail(src, "is not a state_dict (its \"model_state_dict\" is " +
                  std::string(kind_name(dict.kind)) + ")" + advice);
  const auto& items = m.containers[dict.index];
  std::map<std::string, std::size_t> dtype_of;  // storage key -> kStorageTypes index
  for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
    if (items[k].kind != Kind::Str || items[k + 1].kind != Kind::Tensor) continue;
    const TensorRef& ref = m.tensors[items[k + 1].index];
    const StorageRef& st = m.storages[ref.storage];
    PthTensor t{m.strings[items[k].index],
                std::string(kStorageTypes[st.type].dtype),
                ref.shape,
                ref.stride,
                ref.offset,
                st.key};
    const auto [it, added] = dtype_of.emplace(st.key, st.type);
    if (!added && it->second != st.type)
      fail(src, "storage \"" + st.key + "\" is read as both " +
                    std::string(kStorageTypes[it->second].dtype) + " and " + t.dtype);
    auto& bytes = f.storages_[st.key];
    if (!bytes) {
      const std::string name = prefix + "data/" + st.key;
      const zip_int64_t at = entry(z, name);
      if (at < 0)
        fail(src, "tensor \"" + t.name + "\" needs the storage " + name +
                      ", which is not in the archive");
      bytes = std::make_shared<const Bytes>(
          read_entry(archive, static_cast<zip_uint64_t>(at), name, UINT64_MAX, src));
    }
    check_fits(t, st, bytes->size(), src);
    f.tensors_.push_back(std::move(t));
  }
  if (f.tensors_.empty()) fail(src, "is not a state_dict (" + describe(m, dict) + ")" + advice);
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const PthTensor& a, const PthTensor& b) { return a.name < b.name; });
  for (std::size_t k = 1; k < f.tensors_.size(); ++k)
    if (f.tensors_[k].name == f.tensors_[k - 1].name)
      fail(src, "has the tensor \"" + f.tensors_[k].name + "\" twice");
  return f;
}

PthFile PthFile::parse(std::string bytes, std::string source) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* zs = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!zs) fail_open(source, &error, data, bytes.size());
  ZipPtr z(zip_open_from_source(zs, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!z) {
    zip_source_free(zs);
    fail_open(source, &error, data, bytes.size());
  }
  zip_error_fini(&error);
  return load(z.get(), bytes.size(), std::move(source));
}

PthFile PthFile::open(const std::filesystem::path& path) {
  const std::string source = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(source, "cannot open (no such file)");
  if (!std::filesystem::is_regular_file(path, ec)) fail(source, "is not a regular file");
  int code = 0;
  ZipPtr z(zip_open(source.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!z) {
    unsigned char head[2] = {0, 0};
    std::size_t got = 0;
    if (std::FILE* file = std::fopen(source.c_str(), "rb")) {
      got = std::fread(head, 1, sizeof head, file);
      std::fclose(file);
    }
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    fail_open(source, &error, head, got);
  }
  return load(z.get(), std::filesystem::file_size(path, ec), source);
}

const PthTensor* PthFile::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name,
                       [](const PthTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const PthTensor& PthFile::info(std::string_view name) const {
  if (const PthTensor* t = find(name)) return *t;
  fail(source_, "has no tensor \"" + std::string(name) + "\" in its state_dict");
}

std::vector<float> PthFile::values(std::string_view name) const {
  const PthTensor& t = info(name);
  enum class Type { F32, F16, BF16, F64 } type{};
  std::size_t size = 0;
  if (t.dtype == "F32")
    type = Type::F32, size = 4;
  else if (t.dtype == "F16")
    type = Type::F16, size = 2;
  else if (t.dtype == "BF16")
    type = Type::BF16, size = 2;
  else if (t.dtype == "F64")
    type = Type::F64, size = 8;
  else
    fail(source_, "tensor \"" + t.name + "\" has dtype " + t.dtype +
                      ", which attnscope does not read (only F32, F16, BF16, F64)");
  const std::uint64_t n = t.elements();
  if (n > kMaxValuesRead)
    fail(source_, "tensor \"" + t.name + "\" has " + std::to_string(n) +
                      " elements, too many to read as float32");
  const unsigned char* base = storages_.find(t.storage_key)->second->data();
  const auto read = [&](std::uint64_t at) -> float {  // element `at` of the storage
    const unsigned char* p = base + at * size;
    switch (type) {
      case Type::F32:
        return std::bit_cast<float>(static_cast<std::uint32_t>(p[0] | p[1] << 8 | p[2] << 16) |
                                    static_cast<std::uint32_t>(p[3]) << 24);
      case Type::F16:
        return half_to_float(static_cast<std::uint16_t>(p[0] | p[1] << 8));
      case Type::BF16:
        return std::bit_cast<float>(static_cast<std::uint32_t>(p[0]) << 16 |
                                    static_cast<std::uint32_t>(p[1]) << 24);
      case Type::F64:
        break;
    }
    std::uint64_t v = 0;
    for (std::size_t k = 8; k-- > 0;) v = (v << 8) | p[k];
    return static_cast<float>(std::bit_cast<double>(v));
  };
  std::vector<float> out(static_cast<std::size_t>(n));
  // C order: the last index runs fastest. A contiguous tensor (strides of
  // C order) is one run from its offset; any other view follows its strides.
  const std::size_t dims = t.shape.size();
  bool contiguous = true;
  std::uint64_t expect = 1;
  for (std::size_t d = dims; d-- > 0;) {
    if (t.shape[d] != 1 && static_cast<std::uint64_t>(t.stride[d]) != expect) contiguous = false;
    expect *= t.shape[d];  // <= n: no overflow
  }
  if (contiguous) {
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = read(t.storage_offset + k);
    return out;
  }
  std::vector<std::uint64_t> index(dims, 0);
  std::uint64_t at = t.storage_offset;
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k] = read(at);
    for (std::size_t d = dims; d-- > 0;) {
      const auto stride = static_cast<std::uint64_t>(t.stride[d]);
      if (++index[d] < t.shape[d]) {
        at += stride;
        break;
      }
      at -= stride * (t.shape[d] - 1);
      index[d] = 0;
    }
  }
  return out;
}

RowMatrix PthFile::matrix(std::string_view name) const {
  const PthTensor& t = info(name);
  return detail::folded_matrix(t.shape, values(name), source_, t.name);
}

}  // namespace attnscope::core
