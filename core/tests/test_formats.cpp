// test_formats.cpp: stage writers and the readers that take them back,
// embeddings import, and every malformed-input message.
#include <cstring>
#include <limits>

#include "attnscope/formats/files.hpp"
#include "attnscope/formats/formats.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

using testing::same_bits;

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(MatrixFromRows, ReadsRowsInOrderAndRefusesRaggedRows) {
  const RowMatrix m = matrix_from_rows({{1, 2, 3}, {4, 5, 6}});
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m(1, 0), 4.0f);
  EXPECT_EQ(m(0, 2), 3.0f);
  EXPECT_EQ(matrix_from_rows({}).size(), 0);
  EXPECT_THROW(matrix_from_rows({{1, 2}, {3}}), std::invalid_argument);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

// A trace of every variant with heads, bias and dropout, on the book's inputs.
std::vector<Trace> every_variant() {
  std::vector<Trace> traces;
  for (Variant v : kAllVariants)
    traces.push_back(run_attention(testing::every_option(v), testing::book_inputs()));
  return traces;
}

TEST(StageCsv, LabelsQueryRowsAndKeyColumnsWithTokens) {
  Config c;
  c.variant = Variant::Causal;
  const Trace t = run_attention(c, testing::book_inputs());
  const std::string csv = stage_csv(t, *t.find("weights"));
  EXPECT_TRUE(csv.starts_with(",Your,journey,starts,with,one,step\nYour,1,0,0,0,0,0\n")) << csv;
  const std::string masked = stage_csv(t, *t.find("masked_scores"));
  EXPECT_NE(masked.find(",-inf,"), std::string::npos) << masked;
}

TEST(StageCsv, LabelsParameterAxesWithNamesThatAreNotNumbers) {
  Config c;
  c.variant = Variant::SelfAttentionV2;
  c.qkv_bias = true;
  const Trace t = run_attention(c, testing::book_inputs());
  EXPECT_TRUE(stage_csv(t, *t.find("W_query")).starts_with(",out0,out1\nin0,"));
  EXPECT_TRUE(stage_csv(t, *t.find("b_query")).starts_with(",out0,out1\nbias,"));
  EXPECT_TRUE(stage_csv(t, *t.find("queries")).starts_with(",d0,d1\nYour,"));
}

TEST(StageCsv, RoundTripsEveryStageOfEveryVariantBitForBit) {
  for (const Trace& t : every_variant())
    for (const Stage& s : t.stages) {
      const Table table = parse_csv_table(stage_csv(t, s), "x.csv", NonFinite::Allow);
      const StageAxes axes = stage_axes(t, s);
      EXPECT_TRUE(same_bits(table.values, s.data())) << s.id << " head " << s.head;
      EXPECT_EQ(table.row_labels, axes.row_labels) << s.id;
      EXPECT_EQ(table.col_labels, axes.col_labels) << s.id;
    }
}

TEST(StageCsv, QuotesTokensThatNeedItAndReadsThemBack) {
  Inputs in;
  in.tokens = {"a,b", "say \"hi\"", " pad", "12"};
  in.embeddings = matrix_from_rows({{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  const Trace t = run_attention(Config{}, in);
  const std::string csv = stage_csv(t, *t.find("weights"));
  EXPECT_NE(csv.find("\"a,b\""), std::string::npos);
  EXPECT_NE(csv.find("\"say \"\"hi\"\"\""), std::string::npos);
  const Table table = parse_csv_table(csv, "x.csv", NonFinite::Allow);
  EXPECT_EQ(table.row_labels, in.tokens);  // "12" is a name: the empty corner says so
  EXPECT_EQ(table.col_labels, in.tokens);
}

TEST(MatrixNpy, WritesNumpysVersion1Float32Header) {
  const RowMatrix m = matrix_from_rows({{1, 2, 3}, {4, 5, 6}});
  const std::string npy = matrix_npy(m);
  ASSERT_TRUE(npy.starts_with(std::string("\x93NUMPY\x01\x00", 8)));
  const std::size_t header_len =
      static_cast<unsigned char>(npy[8]) | static_cast<unsigned char>(npy[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = npy.substr(10, header_len);
  EXPECT_TRUE(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"))
      << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(npy.size(), 10 + header_len + 6 * 4);
  float first = 0;
  std::memcpy(&first, npy.data() + 10 + header_len, 4);
  EXPECT_EQ(first, 1.0f);
}

TEST(MatrixNpy, RoundTripsEveryStageBitForBit) {
  for (const Trace& t : every_variant())
    for (const Stage& s : t.stages)
      EXPECT_TRUE(same_bits(
          parse_npy(matrix_npy(s.data()), "x.npy", NpyRank::Matrix, NonFinite::Allow), s.data()))
          << s.id;
}

// An .npy file with any header and raw data, for the malformed cases.
std::string npy_with(const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += major;
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string f64_bytes(std::initializer_list<double> values, bool big_endian = false) {
  std::string out;
  for (double v : values) {
    char b[8];
    std::memcpy(b, &v, 8);
    if (big_endian) std::reverse(b, b + 8);
    out.append(b, 8);
  }
  return out;
}

TEST(ParseNpy, ReadsFloat64InEitherByteOrder) {
  const RowMatrix le =
      parse_npy(npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }",
                         f64_bytes({0.5, -2.25})),
                "x.npy", NpyRank::Matrix, NonFinite::Reject);
  EXPECT_EQ(le(0, 1), -2.25f);
  const RowMatrix be =
      parse_npy(npy_with("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 1), }",
                         f64_bytes({0.5, -2.25}, true)),
                "x.npy", NpyRank::Matrix, NonFinite::Reject);
  EXPECT_EQ(be(1, 0), -2.25f);
}

TEST(ParseNpy, ReadsAOneDimensionalBiasAsOneRow) {
  const RowMatrix b = parse_npy(
      npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64_bytes({1, 2})),
      "b.npy", NpyRank::MatrixOrVector, NonFinite::Reject);
  EXPECT_EQ(b.rows(), 1);
  EXPECT_EQ(b.cols(), 2);
}

TEST(ParseNpy, NamesEveryProblem) {
  const std::string ok_dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }";
  const std::pair<std::string, std::string> cases[] = {
      {"not numpy at all", "does not start with the NumPy magic"},
      {npy_with("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }", f64_bytes({1, 2})),
       "dtype '<i8'"},
      {npy_with("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 2), }", f64_bytes({1, 2})),
       "Fortran order"},
      {npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 2), }",
                f64_bytes({1, 2})),
       "shape (1, 1, 2): expected a 2-D array"},
      {npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f64_bytes({1, 2})),
       "shape (2,): expected a 2-D array"},
      {npy_with(ok_dict, f64_bytes({1})), "is truncated"},
      {npy_with(ok_dict, f64_bytes({1, 2, 3})), "8 bytes after the data"},
      {npy_with(ok_dict, f64_bytes({1, std::nan("")})), "index [0, 1] is nan"},
      {npy_with(ok_dict, f64_bytes({1, 1e300})), "too large for a 32-bit float"},
      // The shape is refused before any data is looked at (there is none here).
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 3), }", ""),
       "shape (100000, 3): at most 4096"},
      {npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2)", ""), "bad header"},
      {npy_with(ok_dict, f64_bytes({1, 2}), 9), "format version 9.0"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "header is truncated"},
  };
  for (const auto& [bytes, expect] : cases) {
    const std::string msg =
        error_of([&] { parse_npy(bytes, "e.npy", NpyRank::Matrix, NonFinite::Reject); });
    EXPECT_NE(msg.find(expect), std::string::npos)
        << "expected '" << expect << "' in '" << msg << "'";
    EXPECT_TRUE(msg.starts_with("e.npy: ")) << msg;
  }
}

TEST(StageJson, RoundTripsEveryStageIncludingInfinities) {
  for (const Trace& t : every_variant())
    for (const Stage& s : t.stages) {
      const StageFile f = parse_stage_json(stage_json(t, s), "s.json");
      EXPECT_EQ(f.stage.id, s.id);
      EXPECT_EQ(f.stage.head, s.head);
      EXPECT_EQ(f.stage.layer, s.layer);
      EXPECT_EQ(f.variant, variant_id(t.config.variant));
      EXPECT_EQ(f.tokens, t.tokens);
      EXPECT_TRUE(same_bits(f.stage.data(), s.data())) << s.id;
    }
}

TEST(StageJson, ReadsTheLayerAndTakesAMissingOneAsZero) {
  const std::string rest =
      "\"head\": 1, \"variant\": \"multihead\", \"tokens\": [\"a\"], \"shape\": [1, 1], "
      "\"data\": [[0.5]]}";
  EXPECT_EQ(parse_stage_json("{\"id\": \"weights\", " + rest, "old.json").stage.layer, 0);
  const StageFile f = parse_stage_json("{\"id\": \"weights\", \"layer\": 11, " + rest, "m.json");
  EXPECT_EQ(f.stage.layer, 11);
  EXPECT_EQ(f.stage.head, 1);
  for (const char* bad : {"-1", "1.5", "\"0\"", "100000"}) {
    try {
      parse_stage_json(std::string("{\"id\": \"weights\", \"layer\": ") + bad + ", " + rest,
                       "b.json");
      ADD_FAILURE() << "layer " << bad << " was accepted";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("layer must be a whole number from 0"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(MatrixTorch, WritesPythonThatTorchReadsAtFullPrecision) {
  const RowMatrix m = matrix_from_rows({{0.43f, -kInf}, {1e-20f, 3}});
  EXPECT_EQ(matrix_torch(m),
            "torch.tensor([[0.430000007, float('-inf')],\n"
            "              [9.99999968e-21, 3]])\n");
}

TEST(ParseCsvTable, DetectsHeaderAndNameColumnInEveryCombination) {
  const std::pair<const char*, std::pair<bool, bool>> cases[] = {
      {"1,2\n3,4\n", {false, false}},         {"x,y\n1,2\n3,4\n", {true, false}},
      {"a,1,2\nb,3,4\n", {false, true}},      {"token,x,y\na,1,2\nb,3,4\n", {true, true}},
      {",x,y\n7,1,2\n8,3,4\n", {true, true}},  // empty corner: numeric names
  };
  for (const auto& [text, expect] : cases) {
    const Table t = parse_csv_table(text, "x.csv", NonFinite::Reject);
    EXPECT_EQ(!t.col_labels.empty(), expect.first) << text;
    EXPECT_EQ(!t.row_labels.empty(), expect.second) << text;
    EXPECT_EQ(t.values.rows(), 2) << text;
    EXPECT_EQ(t.values.cols(), 2) << text;
    EXPECT_EQ(t.values(1, 1), 4.0f) << text;
  }
}

TEST(ParseCsvTable, AcceptsCrlfBlankLinesBomAndSpaces) {
  const Table t = parse_csv_table(
      "\xEF\xBB\xBF"
      "a, 1 ,+2\r\n\r\nb,3e0, -4\r\n",
      "x.csv", NonFinite::Reject);
  EXPECT_EQ(t.row_labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.values(0, 1), 2.0f);
  EXPECT_EQ(t.values(1, 1), -4.0f);
}

TEST(ParseCsvTable, NamesEveryProblemWithItsPosition) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "is empty"},
      {"1,2\n3\n", "line 2 has 1 cell but line 1 has 2"},
      {"1,2\n3,4,5\n", "line 2 has 3 cells but line 1 has 2"},
      {"1,2\n3,abc\n", "line 2, column 2: 'abc' is not a number"},
      {"1,2\n3,\n", "line 2, column 2 is empty"},
      {"1,2\n3,nan\n", "line 2, column 2 is 'nan': every value must be a finite number"},
      {"1,2\n-inf,4\n", "line 2, column 1 is '-inf'"},
      {"1,2\n3,1e39\n", "too large for a 32-bit float"},
      {"1,2\n3,1e999\n", "too large for a 32-bit float"},
      {"1,\"2\n", "quoted field is never closed"},
      {"x,y\n", "header line but no data lines"},
      {"x,y\na,1,2\n", "header (line 1) has 2 cells but line 2 has 3"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string msg = error_of([&] { parse_csv_table(text, "e.csv", NonFinite::Reject); });
    EXPECT_NE(msg.find(expect), std::string::npos)
        << "expected '" << expect << "' in '" << msg << "'";
  }
}

TEST(ParseCsvTable, RefusesMoreThan4096RowsOrColumns) {
  std::string tall;
  for (int i = 0; i < 4097; ++i) tall += "1\n";
  EXPECT_NE(error_of([&] {
              parse_csv_table(tall, "e.csv", NonFinite::Reject);
            }).find("more than 4096 rows"),
            std::string::npos);
  std::string wide = "1";
  for (int i = 0; i < 4200; ++i) wide += ",1";
  EXPECT_NE(error_of([&] { parse_csv_table(wide, "e.csv", NonFinite::Reject); }), "");
}

TEST(ParseEmbeddings, ReadsJsonRowsOrAnObjectWithTokens) {
  const ImportedEmbeddings rows =
      parse_embeddings("[[1, 2], [3, 4]]", "e.json", EmbeddingFormat::Json);
  EXPECT_TRUE(rows.tokens.empty());
  EXPECT_EQ(rows.embeddings(1, 0), 3.0f);
  const ImportedEmbeddings obj = parse_embeddings(
      R"({"tokens": ["a", "b"], "embeddings": [[1], [2]]})", "e.json", EmbeddingFormat::Json);
  EXPECT_EQ(obj.tokens, (std::vector<std::string>{"a", "b"}));
}

TEST(ParseEmbeddings, NamesJsonProblems) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"embeddings": [[1]], "variant": "causal"})", "unknown field 'variant'"},
      {R"({"tokens": ["a"]})", "has no \"embeddings\" field"},
      {R"({"tokens": ["a", "b"], "embeddings": [[1]]})", "2 token names for 1 rows"},
      {R"([[1, 2], [3]])", "ragged"},
      {R"([[1, "x"]])", "embeddings[0][1] must be a number"},
      {R"([[1, "nan"]])", "embeddings[0][1] is nan"},
      {R"([[1e39]])", "too large for a 32-bit float"},
      {R"(3)", "must be a list of rows"},
      {R"([[1)", "is not valid JSON"},
  };
  for (const auto& [text, expect] : cases) {
    const std::string msg =
        error_of([&] { parse_embeddings(text, "e.json", EmbeddingFormat::Json); });
    EXPECT_NE(msg.find(expect), std::string::npos)
        << "expected '" << expect << "' in '" << msg << "'";
    EXPECT_TRUE(msg.starts_with("e.json: ")) << msg;
  }
}

TEST(ParseEmbeddings, RefusesHugeJsonListsBeforeBuildingThem) {
  std::string text = "[[1]";
  for (int i = 0; i < 9000; ++i) text += ",[1]";
  text += "]";
  EXPECT_NE(error_of([&] {
              parse_embeddings(text, "e.json", EmbeddingFormat::Json);
            }).find("more than 8192"),
            std::string::npos);
}

TEST(ParseEmbeddings, ListsJustOverTheLimitGetTheSpecificMessage) {
  std::string text = "[[1]";
  for (int i = 0; i < 4096; ++i) text += ",[1]";
  text += "]";
  const std::string message =
      error_of([&] { parse_embeddings(text, "e.json", EmbeddingFormat::Json); });
  EXPECT_EQ(message.find("more than 8192"), std::string::npos) << message;
  EXPECT_NE(message.find("4097"), std::string::npos) << message;
}

TEST(ApplyEmbeddings, KeepsCurrentTokensWhenTheCountMatches) {
  ImportedEmbeddings e;
  e.embeddings = matrix_from_rows({{1}, {2}});
  EXPECT_EQ(apply_embeddings(e, {"a", "b"}, "e.npy").tokens, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(apply_embeddings(e, {}, "e.npy").tokens, (std::vector<std::string>{"t0", "t1"}));
  const std::string msg = error_of([&] { apply_embeddings(e, {"a", "b", "c"}, "e.npy"); });
  EXPECT_NE(msg.find("e.npy: has 2 rows but there are 3 tokens"), std::string::npos) << msg;
  e.tokens = {"x", "y"};
  EXPECT_EQ(apply_embeddings(e, {"a", "b", "c"}, "e.csv").tokens, e.tokens);
  e.tokens = {"x", "\xff"};
  EXPECT_NE(error_of([&] { apply_embeddings(e, {}, "e.csv"); }).find("not valid UTF-8"),
            std::string::npos);
}

TEST(DetectEmbeddingFormat, UsesTheExtensionThenTheContent) {
  EXPECT_EQ(detect_embedding_format("a.CSV", "[1]"), EmbeddingFormat::Csv);
  EXPECT_EQ(detect_embedding_format("a.npy", ""), EmbeddingFormat::Npy);
  EXPECT_EQ(detect_embedding_format("a", "\x93NUMPY"), EmbeddingFormat::Npy);
  EXPECT_EQ(detect_embedding_format("a", " {\"embeddings\""), EmbeddingFormat::Json);
  EXPECT_EQ(detect_embedding_format("a", "1,2"), EmbeddingFormat::Csv);
}

TEST(ReadEmbeddingsFile, NamesTheFileInEveryMessage) {
  testing::TempDir dir;
  testing::write_text(dir / "e.csv", "1,2\n3,x\n");
  const std::string msg = error_of([&] { read_embeddings_file(dir / "e.csv"); });
  EXPECT_TRUE(msg.starts_with((dir / "e.csv").string() + ": line 2, column 2")) << msg;
}

TEST(ExportStages, NamesFilesByTheRuleInTraceOrder) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  const auto t = std::chrono::system_clock::from_time_t(1704164645);  // 2024-01-02 03:04:05
  Config c;
  c.variant = Variant::MultiheadWrapper;
  c.num_heads = 2;
  const Trace trace = run_attention(c, testing::book_inputs());
  testing::TempDir dir;
  const std::vector<const Stage*> chosen = {trace.find("inputs"), trace.find("weights", 1)};
  const auto paths =
      export_stages(trace, chosen, dir.path(), ".npy", data_renderer(DataFormat::Npy), t);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], dir / "inputs_multihead_wrapper_20240102-030405.npy");
  EXPECT_EQ(paths[1], dir / "weights_h1_multihead_wrapper_20240102-030405.npy");
  EXPECT_EQ(testing::read_text(paths[1]), matrix_npy(trace.find("weights", 1)->data()));
  const auto again =
      export_stages(trace, chosen, dir.path(), ".npy", data_renderer(DataFormat::Npy), t);
  EXPECT_EQ(again[0], dir / "inputs_multihead_wrapper_20240102-030405-1.npy");
}

TEST(ExportStages, RemovesWhatItWroteWhenALaterWriteFails) {
  const Trace trace = run_attention(Config{}, testing::book_inputs());
  testing::TempDir dir;
  testing::write_text(dir / "keep.txt", "precious");
  std::vector<const Stage*> all;
  for (const auto& s : trace.stages) all.push_back(&s);
  int calls = 0;
  const StageRenderer failing = [&](const Trace&, const Stage& s) -> std::string {
    if (++calls == 3) throw FileError("cannot write 'x': no space left on the disk");
    return s.id;
  };
  EXPECT_THROW(
      export_stages(trace, all, dir.path(), ".txt", failing, std::chrono::system_clock::now()),
      FileError);
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"keep.txt"}));
  EXPECT_EQ(testing::read_text(dir / "keep.txt"), "precious");
}

}  // namespace
}  // namespace attnscope::core
