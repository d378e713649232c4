// test_pth.cpp: the .pth reader on files the live PyTorch wrote
// (pth_fixtures.py; the PthTorch tests skip without PyTorch) and on archives
// built here with libzip around pickles written opcode by opcode: values,
// strides, shared storages, deflated entries, and every malformed case.
#include <gtest/gtest.h>
#include <zip.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attnscope/formats/pth.hpp"
#include "temp_dir.hpp"

namespace core = attnscope::core;
using core::testing::TempDir;

namespace {

// ---- pickles, opcode by opcode ----

struct Pickle {
  std::string s = "\x80\x02";  // PROTO 2

  Pickle& op(char c) {
    s.push_back(c);
    return *this;
  }
  Pickle& str(const std::string& v) {  // BINUNICODE
    op('X');
    for (int k = 0; k < 4; ++k) s.push_back(static_cast<char>((v.size() >> (8 * k)) & 0xff));
    s += v;
    return *this;
  }
  Pickle& integer(std::int64_t v) {  // BININT, or LONG1 with 8 bytes
    const bool small = v >= INT32_MIN && v <= INT32_MAX;
    op(small ? 'J' : '\x8a');
    if (!small) s.push_back(8);
    for (int k = 0; k < (small ? 4 : 8); ++k)
      s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * k)) & 0xff));
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    s += "c" + module + "\n" + name + "\n";
    return *this;
  }
  Pickle& ints(const std::vector<std::int64_t>& v) {  // a tuple
    op('(');
    for (std::int64_t x : v) integer(x);
    return op('t');
  }
  // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, shape, stride,
  // False, OrderedDict()).
  Pickle& tensor(const std::string& type, const std::string& key, std::int64_t numel,
                 std::int64_t offset, const std::vector<std::int64_t>& shape,
                 const std::vector<std::int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").op('(').op('(').str("storage");
    global("torch", type).str(key).str("cpu").integer(numel).op('t').op('Q');
    integer(offset).ints(shape).ints(stride).op('\x89');
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
};

// {"w": F32 tensor over storage "0"} as torch.save writes a bare state_dict.
std::string one_tensor(std::int64_t numel, std::int64_t offset,
                       const std::vector<std::int64_t>& shape,
                       const std::vector<std::int64_t>& stride,
                       const std::string& type = "FloatStorage") {
  Pickle p;
  p.op('}').op('(').str("w").tensor(type, "0", numel, offset, shape, stride);
  return p.op('u').op('.').s;
}

std::string f32_bytes(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A zip archive of `entries` (name, bytes), written by libzip and read back.
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& entries,
                     zip_int32_t method = ZIP_CM_STORE) {
  TempDir dir;
  const std::string path = (dir / "a.zip").string();
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) throw std::runtime_error("zip_open failed");
  for (const auto& [name, bytes] : entries) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t at = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (at < 0) throw std::runtime_error("zip_file_add failed");
    zip_set_file_compression(z, static_cast<zip_uint64_t>(at), method, 0);
  }
  if (zip_close(z) != 0) throw std::runtime_error("zip_close failed");
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// archive/data.pkl = pickle, archive/data/0 = storage, archive/version.
std::string pth(const std::string& pickle, const std::string& storage,
                zip_int32_t method = ZIP_CM_STORE) {
  return make_zip(
      {{"archive/data.pkl", pickle}, {"archive/data/0", storage}, {"archive/version", "3\n"}},
      method);
}

// The ParseError message parse() throws on `bytes` ("" when it accepts them).
std::string error_of(const std::string& bytes) {
  try {
    core::PthFile::parse(bytes, "bad.pth");
  } catch (const core::ParseError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(bytes, text)                                     \
  do {                                                                  \
    const std::string message = error_of(bytes);                        \
    EXPECT_NE(message.find("bad.pth: "), std::string::npos) << message; \
    EXPECT_NE(message.find(text), std::string::npos) << message;        \
  } while (0)

const std::vector<float> kSix = {1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 8.0f};

// ---- hand-built archives ----

TEST(Pth, ReadsAHandBuiltStateDict) {
  const auto f =
      core::PthFile::parse(pth(one_tensor(6, 0, {2, 3}, {3, 1}), f32_bytes(kSix)), "one.pth");
  EXPECT_EQ(f.source(), "one.pth");
  EXPECT_EQ(f.dict_key(), "");
  ASSERT_EQ(f.tensors().size(), 1u);
  const core::PthTensor& t = f.info("w");
  EXPECT_EQ(t.dtype, "F32");
  EXPECT_EQ(t.shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(t.elements(), 6u);
  EXPECT_EQ(f.values("w"), kSix);
  const core::RowMatrix m = f.matrix("w");
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m(1, 2), 8.0f);
  EXPECT_EQ(f.find("nope"), nullptr);
  try {
    f.info("nope");
    FAIL() << "info() accepted a missing tensor";
  } catch (const core::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("one.pth: has no tensor \"nope\""), std::string::npos);
  }
}

TEST(Pth, GathersAStridedViewWithAnOffset) {
  // Column 1 of the 2 x 3 storage, as a [2] tensor: offset 1, stride 3.
  const auto f = core::PthFile::parse(pth(one_tensor(6, 1, {2}, {3}), f32_bytes(kSix)), "col.pth");
  EXPECT_EQ(f.values("w"), (std::vector<float>{-2.0f, -0.5f}));
  // The transpose: [3, 2] with stride (1, 3).
  const auto t =
      core::PthFile::parse(pth(one_tensor(6, 0, {3, 2}, {1, 3}), f32_bytes(kSix)), "t.pth");
  EXPECT_EQ(t.values("w"), (std::vector<float>{1.5f, 0.0f, -2.0f, -0.5f, 3.25f, 8.0f}));
}

TEST(Pth, ReadsDeflatedEntries) {
  const auto f = core::PthFile::parse(
      pth(one_tensor(6, 0, {6}, {1}), f32_bytes(kSix), ZIP_CM_DEFLATE), "deflated.pth");
  EXPECT_EQ(f.values("w"), kSix);
}

TEST(Pth, RefusesWhatIsNotATorchZip) {
  EXPECT_REFUSED(std::string("hello, world"), "is not a zip archive");
  EXPECT_REFUSED(std::string("\x80\x02}q\x00.", 6), "legacy torch.save file");
  EXPECT_REFUSED(make_zip({{"archive/other", "x"}}), "without <archive>/data.pkl");
  EXPECT_REFUSED(make_zip({{"a/data.pkl", "x"}, {"b/data.pkl", "y"}}), "holds two pickles");
  const std::string good = pth(one_tensor(6, 0, {6}, {1}), f32_bytes(kSix));
  EXPECT_REFUSED(good.substr(0, good.size() - 30), "zip archive");
}

// Sets the uncompressed and compressed sizes of `name` in its local and
// central zip headers to `size`.
std::string with_entry_size(std::string zip, const std::string& name, std::uint32_t size) {
  const auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) zip[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
  };
  for (const auto& [sig, sizes, name_at] : {std::tuple{std::string("PK\x03\x04"), 18, 30},
                                            std::tuple{std::string("PK\x01\x02"), 20, 46}})
    for (std::size_t at = zip.find(sig); at != std::string::npos; at = zip.find(sig, at + 1))
      if (zip.compare(at + name_at, name.size(), name) == 0) {
        put32(at + sizes, size);
        put32(at + sizes + 4, size);
      }
  return zip;
}

TEST(Pth, RefusesEntriesLargerThanTheArchive) {
  const std::string good = pth(one_tensor(6, 0, {6}, {1}), f32_bytes(kSix));
  const std::string huge = error_of(with_entry_size(good, "archive/data/0", 0xfffffff0u));
  EXPECT_NE(huge.find("bad.pth: "), std::string::npos) << huge;
  EXPECT_NE(huge.find("zip"), std::string::npos) << huge;
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", one_tensor(6, 0, {6}, {1})},
                           {"archive/data/0", f32_bytes(kSix)},
                           {"archive/byteorder", "big"}}),
                 "stores its tensors big-endian");
}

TEST(Pth, RefusesMalformedPickles) {
  const std::string storage = f32_bytes(kSix);
  const std::string good = one_tensor(6, 0, {6}, {1});
  EXPECT_REFUSED(pth(good.substr(0, good.size() - 1), storage), "ends without STOP");
  EXPECT_REFUSED(pth(good.substr(0, 10), storage), "truncated");
  EXPECT_REFUSED(pth(std::string("\x80\x02\xff.", 4), storage), "unknown pickle opcode 0xff");
  EXPECT_REFUSED(pth(std::string("\x80\x02.", 3), storage), "stack underflow");
  EXPECT_REFUSED(pth(std::string("\x80\x02(.", 4), storage), "STOP inside an open MARK");
  EXPECT_REFUSED(pth(std::string("\x80\x02h\x05.", 5), storage), "memo index 5");
  EXPECT_REFUSED(pth("\x80\x02" + std::string(5000, '(') + "N.", storage), "nesting deeper");
  EXPECT_REFUSED(pth(std::string("\x80\x02]N}s.", 7), storage), "SETITEM needs a dict");
  EXPECT_REFUSED(pth(std::string("\x80\x02X\xff\xff\xff\x7f", 7), storage), "truncated");
  Pickle evil;
  evil.global("os", "system").str("echo hi").op('\x85').op('R').op('.');
  EXPECT_REFUSED(pth(evil.s, storage), "is not a state_dict: it calls os.system");
}

TEST(Pth, RefusesWhatIsNotAStateDict) {
  const std::string storage = f32_bytes(kSix);
  EXPECT_REFUSED(pth(std::string("\x80\x02]K\x01\x61.", 7), storage),
                 "is not a state_dict (the file holds a list); save one with torch.save");
  Pickle no_tensors;
  no_tensors.op('}').str("lr").op('N').op('s').op('.');
  EXPECT_REFUSED(pth(no_tensors.s, storage), "not a state_dict (a dict without tensors: \"lr\")");
  Pickle bad_model;
  bad_model.op('}').str("model_state_dict").integer(3).op('s').op('.');
  EXPECT_REFUSED(pth(bad_model.s, storage), "its \"model_state_dict\" is an int");
  Pickle twice;
  twice.op('}').op('(').str("w").tensor("FloatStorage", "0", 6, 0, {6}, {1});
  twice.str("w").tensor("FloatStorage", "0", 6, 0, {3}, {1}).op('u').op('.');
  EXPECT_REFUSED(pth(twice.s, storage), "has the tensor \"w\" twice");
}

TEST(Pth, RefusesStoragesThatDoNotFit) {
  const std::string storage = f32_bytes(kSix);
  // 3 x 3 from 6 elements; offset 4 + 3 elements; a stride that overflows.
  EXPECT_REFUSED(pth(one_tensor(6, 0, {3, 3}, {3, 1}), storage),
                 "tensor \"w\" (offset 0, its shape and stride) reaches past its storage");
  EXPECT_REFUSED(pth(one_tensor(6, 4, {3}, {1}), storage), "reaches past");
  EXPECT_REFUSED(pth(one_tensor(6, 0, {4, 2}, {std::int64_t{1} << 62, 1}), storage),
                 "reaches past");
  // The pickle says 8 elements, the entry holds 6.
  EXPECT_REFUSED(pth(one_tensor(8, 0, {2}, {1}), storage),
                 "storage \"0\" is 24 bytes, but the pickle says it holds 8 F32 elements");
  EXPECT_REFUSED(make_zip({{"archive/data.pkl", one_tensor(6, 0, {6}, {1})}}),
                 "needs the storage archive/data/0, which is not in the archive");
  EXPECT_REFUSED(pth(one_tensor(6, 0, {6}, {1}, "ComplexFloatStorage"), storage),
                 "torch.ComplexFloatStorage is not supported");
  EXPECT_REFUSED(pth(one_tensor(6, 0, {2, 3}, {3}), storage), "size has 2 dimensions, stride 1");
  EXPECT_REFUSED(pth(one_tensor(6, 0, {6}, {-1}), storage), "non-negative");
}

TEST(Pth, EmptyTensorsNeedNoStorage) {
  const auto f = core::PthFile::parse(pth(one_tensor(0, 0, {0, 4}, {4, 1}), ""), "empty.pth");
  EXPECT_TRUE(f.values("w").empty());
  EXPECT_EQ(f.matrix("w").rows(), 0);
}

// ---- files the live PyTorch wrote (pth_fixtures.py) ----

class PthTorch : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("ATTNSCOPE_PTH_FIXTURES");
    if (!dir || !std::filesystem::exists(std::filesystem::path(dir) / "expected.json"))
      GTEST_SKIP() << "no PyTorch-written fixtures (ATTNSCOPE_PTH_FIXTURES; needs python3-torch)";
    dir_ = dir;
    std::ifstream in(dir_ / "expected.json");
    expected_ = nlohmann::json::parse(in);
  }

  // Every tensor expected.json lists for `file`, checked against the reader.
  void check_file(const std::string& file) {
    const auto f = core::PthFile::open(dir_ / file);
    const nlohmann::json& want = expected_.at(file);
    EXPECT_EQ(f.dict_key(), want.at("dict_key").get<std::string>());
    ASSERT_EQ(f.tensors().size(), want.at("tensors").size()) << file;
    for (const auto& [name, t] : want.at("tensors").items()) {
      SCOPED_TRACE(file + ": " + name);
      const core::PthTensor& got = f.info(name);
      EXPECT_EQ(got.dtype, t.at("dtype").get<std::string>());
      EXPECT_EQ(got.shape, t.at("shape").get<std::vector<std::uint64_t>>());
      EXPECT_EQ(got.stride, t.at("stride").get<std::vector<std::int64_t>>());
      EXPECT_EQ(got.storage_offset, t.at("offset").get<std::uint64_t>());
      if (!t.contains("values")) {
        EXPECT_THROW(f.values(name), core::ParseError);
        continue;
      }
      std::vector<float> values;
      for (double v : t.at("values")) values.push_back(static_cast<float>(v));
      EXPECT_EQ(f.values(name), values);
    }
  }

  std::string error_of_file(const std::string& file) {
    try {
      core::PthFile::open(dir_ / file);
    } catch (const core::ParseError& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
  nlohmann::json expected_;
};

TEST_F(PthTorch, BareStateDict) { check_file("state_dict.pth"); }

TEST_F(PthTorch, HalfBfloat16DoubleAndIntegerStorages) { check_file("dtypes.pth"); }

TEST_F(PthTorch, ViewsKeepStridesAndOffsetsIntoOneStorage) {
  check_file("views.pth");
  const auto f = core::PthFile::open(dir_ / "views.pth");
  EXPECT_EQ(f.info("t").stride, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(f.info("row").storage_offset, 4u);
  EXPECT_EQ(f.info("t").storage_key, f.info("x").storage_key);
  EXPECT_EQ(f.matrix("t")(3, 2), 11.0f);
}

TEST_F(PthTorch, Parameters) { check_file("parameter.pth"); }

TEST_F(PthTorch, PickleProtocol4) { check_file("protocol4.pth"); }

TEST_F(PthTorch, MemoPast255Entries) { check_file("long_memo.pth"); }

TEST_F(PthTorch, TrainingCheckpointWithAdamState) { check_file("checkpoint.pth"); }

TEST_F(PthTorch, RefusesWhatIsNotAStateDict) {
  const auto has = [&](const std::string& file, const std::string& text) {
    const std::string message = error_of_file(file);
    EXPECT_NE(message.find(file + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(text), std::string::npos) << message;
  };
  has("legacy.pth", "legacy torch.save file");
  has("list.pth", "is not a state_dict (the file holds a list)");
  has("optimizer_only.pth", "a dict without tensors: \"state\", \"param_groups\"");
  has("calls_print.pth", "is not a state_dict: it calls __builtin__.print");
  has("whole_model.pth", "is not a state_dict: it calls torch.nn.modules.");
  has("missing.pth", "cannot open (no such file)");
}

}  // namespace
