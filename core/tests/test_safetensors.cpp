// test_safetensors.cpp: .safetensors files written byte by byte (F32, F16,
// BF16 values, padded headers, sharded indexes, every malformed case) and
// GPT-2 config.json files.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attnscope/formats/safetensors.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "temp_dir.hpp"

namespace core = attnscope::core;
using core::testing::TempDir;
using core::testing::write_text;

namespace {

// 8-byte little-endian length + header + buffer.
std::string safetensors_bytes(const std::string& header, const std::string& buffer,
                              std::uint64_t length_override = UINT64_MAX) {
  const std::uint64_t n = length_override == UINT64_MAX ? header.size() : length_override;
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + buffer;
}

// The header followed by spaces up to a multiple of 8 bytes, as writers pad it.
std::string padded(std::string header) {
  while (header.size() % 8 != 0) header += ' ';
  return header;
}

std::string le32(std::uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

std::string le16(std::uint16_t v) {
  return {static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
}

std::string f32_bytes(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s += le32(std::bit_cast<std::uint32_t>(v));
  return s;
}

// The ParseError message parsing `bytes` gives ("" when it parses).
std::string error_of(const std::string& bytes) {
  try {
    core::SafetensorsFile::parse(bytes, "bad.safetensors");
  } catch (const core::ParseError& e) {
    return e.what();
  }
  return "";
}

// A header with one F32 [2] tensor "a" at [begin, end) and 8 buffer bytes.
std::string one_tensor(const std::string& entry) {
  return safetensors_bytes("{\"a\":" + entry + "}", f32_bytes({1.0f, 2.0f}));
}

}  // namespace

TEST(Safetensors, F32MatrixIsReadInPlaceFromTheMappedFile) {
  TempDir dir;
  // Header padded with trailing spaces to 8-byte alignment, as writers do.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[24,36]}})";
  while (header.size() % 8 != 0) header += ' ';
  write_text(dir / "model.safetensors",
             safetensors_bytes(header, f32_bytes({1, 2, 3, 4, 5, 6, 0.5f, -0.25f, 1e-3f})));
  const auto f = core::SafetensorsFile::open(dir / "model.safetensors");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].name, "b");  // sorted by name
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const auto w = f.matrix("w");
  ASSERT_EQ(w.rows(), 2);
  ASSERT_EQ(w.cols(), 3);
  EXPECT_EQ(w(1, 2), 6.0f);
  const auto b = f.f32("b");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1], -0.25f);
  EXPECT_EQ(f.matrix("b").rows(), 1);
  EXPECT_EQ(f.matrix("b").cols(), 3);
  EXPECT_EQ(f.info("w").shape, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_THROW(f.info("nope"), core::ParseError);
}

TEST(Safetensors, UnalignedF32IsCopiedNotViewed) {
  // A 5-byte header puts the buffer at byte 13: no float can be read in place.
  const auto f = core::SafetensorsFile::parse(
      safetensors_bytes(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})" + std::string(1, ' '),
          f32_bytes({7})),
      "odd.safetensors");
  EXPECT_EQ(f.matrix("a")(0, 0), 7.0f);
  try {
    (void)f.f32("a");
    FAIL() << "misaligned view handed out";
  } catch (const core::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("not 4-byte aligned"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, F16ValuesIncludingSubnormalsInfAndNanConvert) {
  // 1.0, -2.0, smallest subnormal 2^-24, largest subnormal, +inf, NaN, 65504, -0.
  const std::string data = le16(0x3c00) + le16(0xc000) + le16(0x0001) + le16(0x03ff) +
                           le16(0x7c00) + le16(0x7e00) + le16(0x7bff) + le16(0x8000);
  const auto f = core::SafetensorsFile::parse(
      safetensors_bytes(R"({"h":{"dtype":"F16","shape":[2,4],"data_offsets":[0,16]}})", data), "h");
  const auto m = f.matrix("h");
  ASSERT_EQ(m.rows(), 2);
  EXPECT_EQ(m(0, 0), 1.0f);
  EXPECT_EQ(m(0, 1), -2.0f);
  EXPECT_EQ(m(0, 2), std::ldexp(1.0f, -24));
  EXPECT_EQ(m(0, 3), std::ldexp(1023.0f, -24));
  EXPECT_EQ(m(1, 0), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(m(1, 1)));
  EXPECT_EQ(m(1, 2), 65504.0f);
  EXPECT_TRUE(std::signbit(m(1, 3)));
  EXPECT_THROW(f.f32("h"), core::ParseError);  // not F32: no in-place view
}

TEST(Safetensors, Bf16IsTheUpperHalfOfFloat32) {
  const std::string data = le16(0x3f80) + le16(0xc0a0) + le16(0xff80) + le16(0x0001);
  const auto f = core::SafetensorsFile::parse(
      safetensors_bytes(R"({"x":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", data), "x");
  const auto v = f.values("x");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -5.0f);
  EXPECT_EQ(v[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(std::bit_cast<std::uint32_t>(v[3]), 0x00010000u);
}

TEST(Safetensors, OtherDtypesAreListedButRefusedByName) {
  const auto f = core::SafetensorsFile::parse(
      safetensors_bytes(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                        std::string(8, '\0')),
      "i.safetensors");
  EXPECT_EQ(f.info("i").dtype, "I64");
  try {
    f.matrix("i");
    FAIL() << "I64 read";
  } catch (const core::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("dtype I64"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, MalformedFilesNameTheProblem) {
  const std::string ok = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  EXPECT_EQ(error_of(one_tensor(ok)), "");
  struct Case {
    std::string bytes, expected;
  };
  const Case cases[] = {
      {"abc", "shorter than the 8-byte header length"},
      {safetensors_bytes("{}", "", 1000), "runs past the file's end"},
      {safetensors_bytes("{}", "", 200'000'000), "over the 100 MB limit"},
      {safetensors_bytes("[1,2]", ""), "does not start with '{'"},
      {safetensors_bytes("{\"a\":", ""), "not valid JSON"},
      {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                         R"("a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
                         ""),
       "key \"a\" twice"},
      {one_tensor(R"({"dtype":"F32","shape":[2]})"), "lacks \"data_offsets\""},
      {one_tensor(R"({"shape":[2],"data_offsets":[0,8]})"), "lacks \"dtype\""},
      {one_tensor(R"({"dtype":"F32","data_offsets":[0,8]})"), "lacks \"shape\""},
      {one_tensor("[1]"), "is not an object"},
      {one_tensor(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), "\"dtype\" is not a string"},
      {one_tensor(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"),
       "\"shape\" is not an array"},
      {one_tensor(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), "non-negative"},
      {one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), "not [begin, end]"},
      {one_tensor(R"({"dtype":"Q4","shape":[2],"data_offsets":[0,8]})"), "unknown dtype \"Q4\""},
      {one_tensor(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), "need 12 bytes"},
      {one_tensor(R"({"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]})"),
       "overflows"},
      {one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[8,16]})"), "past the buffer"},
      {one_tensor(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), "is after end"},
      {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         f32_bytes({1, 2})),
       "overlap"},
      {safetensors_bytes(R"({"__metadata__":{"k":1}})", ""), "is not a string"},
      {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[[[1]]],"data_offsets":[0,4]}})", ""),
       "nests deeper"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of(c.bytes);
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos)
        << "got: " << msg << "\nwant: " << c.expected;
  }
}

TEST(Safetensors, HeaderOverTheLimitIsRefusedBeforeReading) {
  // Checked before the file's size: a header of 100 MB + 1 is never read.
  const std::string bytes = safetensors_bytes("{}", "", core::kMaxSafetensorsHeaderBytes + 1);
  EXPECT_NE(error_of(bytes).find("100 MB"), std::string::npos) << error_of(bytes);
}

TEST(Safetensors, MissingFileIsNamed) {
  TempDir dir;
  try {
    core::SafetensorsFile::open(dir / "absent.safetensors");
    FAIL();
  } catch (const core::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.safetensors: cannot open"), std::string::npos);
  }
}

TEST(Safetensors, ShardedIndexLooksUpEveryShard) {
  TempDir dir;
  write_text(dir / "s1.safetensors",
             safetensors_bytes(padded(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"),
                               f32_bytes({3})));
  write_text(dir / "s2.safetensors",
             safetensors_bytes(padded(R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"),
                               f32_bytes({4, 5})));
  write_text(
      dir / "model.safetensors.index.json",
      R"({"metadata":{"total_size":12},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  const auto s = core::SafetensorsShards::open(dir / "model.safetensors.index.json");
  EXPECT_EQ(s.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.shards().size(), 2u);
  EXPECT_EQ(s.f32("a")[0], 3.0f);
  EXPECT_EQ(s.matrix("b")(0, 1), 5.0f);
  EXPECT_THROW(s.info("c"), core::ParseError);

  auto error_for = [&](const std::string& index) {
    write_text(dir / "bad.index.json", index);
    try {
      core::SafetensorsShards::open(dir / "bad.index.json");
    } catch (const core::ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string msg = error_for(R"({"weight_map":{"a":"s2.safetensors"}})");
  EXPECT_NE(msg.find("bad.index.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not in its shard \"s2.safetensors\""), std::string::npos) << msg;
  msg = error_for(R"({"weight_map":{"a":"missing.safetensors"}})");
  EXPECT_NE(msg.find("shard \"missing.safetensors\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  msg = error_for(R"({"weight_map":{"a":"../s1.safetensors"}})");
  EXPECT_NE(msg.find("a file name in the index's folder"), std::string::npos) << msg;
  msg = error_for(R"({"tensors":{}})");
  EXPECT_NE(msg.find("no \"weight_map\""), std::string::npos) << msg;
}

TEST(Gpt2Config, AbsentKeysTakeHuggingFaceDefaults) {
  const auto c = core::parse_gpt2_config(R"({"model_type":"gpt2"})", "config.json");
  EXPECT_EQ(c.n_layer, 12);
  EXPECT_EQ(c.n_head, 12);
  EXPECT_EQ(c.n_embd, 768);
  EXPECT_EQ(c.n_positions, 1024);
  EXPECT_EQ(c.vocab_size, 50257);
  EXPECT_EQ(c.n_inner, 3072);
  EXPECT_EQ(c.layer_norm_epsilon, 1e-5);
  EXPECT_EQ(c.activation_function, core::Gpt2Activation::GeluNew);
  EXPECT_TRUE(c.scale_attn_weights);
  EXPECT_FALSE(c.scale_attn_by_inverse_layer_idx);
  EXPECT_TRUE(c.tie_word_embeddings);
}

TEST(Gpt2Config, ReadsEveryKey) {
  const auto c = core::parse_gpt2_config(
      R"({"model_type":"gpt2","n_layer":2,"n_head":4,"n_embd":64,"n_positions":32,
          "vocab_size":100,"n_inner":null,"layer_norm_epsilon":1e-6,
          "activation_function":"gelu","scale_attn_weights":false,
          "scale_attn_by_inverse_layer_idx":true,"tie_word_embeddings":false})",
      "config.json");
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.head_dim(), 16);
  EXPECT_EQ(c.n_inner, 256);  // null: 4 * n_embd
  EXPECT_EQ(c.layer_norm_epsilon, 1e-6);
  EXPECT_EQ(c.activation_function, core::Gpt2Activation::Gelu);
  EXPECT_FALSE(c.scale_attn_weights);
  EXPECT_TRUE(c.scale_attn_by_inverse_layer_idx);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(core::parse_gpt2_config(R"({"n_inner":100})", "c").n_inner, 100);
}

TEST(Gpt2Config, RefusalsNameTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"model_type":"bert"})", "\"model_type\""},
      {R"({"add_cross_attention":true})", "\"add_cross_attention\""},
      {R"({"activation_function":"swish"})", "\"activation_function\""},
      {R"({"n_layer":0})", "\"n_layer\""},
      {R"({"n_head":-1})", "\"n_head\""},
      {R"({"n_embd":1.5})", "\"n_embd\""},
      {R"({"n_embd":10,"n_head":3})", "not divisible by \"n_head\""},
      {R"({"n_inner":0})", "\"n_inner\""},
      {R"({"layer_norm_epsilon":"x"})", "\"layer_norm_epsilon\""},
      {R"({"scale_attn_weights":1})", "\"scale_attn_weights\""},
      {"[1]", "not a JSON object"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      core::parse_gpt2_config(text, "config.json");
      ADD_FAILURE() << text << " accepted";
    } catch (const core::ParseError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    }
  }
}
