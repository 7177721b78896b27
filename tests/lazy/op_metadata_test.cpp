// OpMetadata (XLA's): each HLO instruction names the IR op it was lowered from
// and the user's line that recorded it; passes keep it through rewrites and
// fusion; the printer and the serialized module carry it; and a failure at run
// time (an index out of range) names that op and line on every backend. Also:
// cross_entropy's targets are checked when the graph runs (an unchecked target
// >= C would pick another row's logit).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backend/cpu/cpu_pipeline.h"
#include "backend/registry.h"
#include "core/error.h"
#include "hlo/hlo_serialization.h"
#include "hlo/op_metadata.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/hlo_builder.h"
#include "lazy/execution_mode.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;

struct Lowered {
  HloModule module;
  std::vector<runtime::Buffer> arguments;
};

Lowered lower(const std::vector<Tensor>& outputs) {
  std::vector<const lazy::Node*> nodes;
  for (const Tensor& t : outputs) nodes.push_back(t.ir_value().get());
  lazy::GraphSignature signature = lazy::graph_signature(nodes);
  Lowered l{lazy::lower_graph(signature, "metadata"), {}};
  for (const lazy::Node* p : signature.parameters) l.arguments.push_back(p->data());
  return l;
}

const HloInstruction* find(const HloModule& m, HloOpcode opcode) {
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == opcode) return &in;
  }
  return nullptr;
}

TEST(OpMetadata, LoweringNamesTheOpAndTheUsersLine) {
  Tensor table = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor ids = from_vector(std::vector<int64_t>{2, 0}, {2});
  const int line = __LINE__ + 1;
  Tensor rows = embedding(table, ids) * 2.0;
  Lowered l = lower({rows});
  const HloInstruction* gather = find(l.module, HloOpcode::kGather);
  ASSERT_NE(gather, nullptr) << l.module.to_string();
  EXPECT_EQ(gather->metadata.op_type, "aten::embedding");
  EXPECT_EQ(gather->metadata.source_line, line);
  EXPECT_NE(gather->metadata.source_file.find("op_metadata_test.cpp"), std::string::npos) << gather->metadata.source_file;
  EXPECT_EQ(hlo::origin_text(gather->metadata), "aten::embedding called from op_metadata_test.cpp:" + std::to_string(line));
  // XLA's printed form, and the parameters and ROOT tuple belong to no op.
  const std::string text = l.module.to_string();
  EXPECT_NE(text.find("metadata={op_type=\"aten::embedding\" source_file=\"" + gather->metadata.source_file +
                      "\" source_line=" + std::to_string(line) + "}"),
            std::string::npos)
      << text;
  EXPECT_TRUE(l.module.at(l.module.root).metadata.empty());
  EXPECT_TRUE(find(l.module, HloOpcode::kParameter)->metadata.empty());
  // Serialized and read back (the persistent compile cache): the same text.
  EXPECT_EQ(hlo::deserialize_module(hlo::serialize_module(l.module)).to_string(), text);
}

TEST(OpMetadata, PassesGiveAFusionTheMetadataOfWhatItReplaces) {
  Tensor x = from_vector(std::vector<float>{1, -2, 3, -4}, {4});
  const int line = __LINE__ + 1;
  Tensor y = relu(x * 3.0 + 1.0);
  Lowered l = lower({y});
  hlo::run_passes(l.module, backend::cpu::cpu_pass_pipeline());
  const HloInstruction* fusion = find(l.module, HloOpcode::kFusion);
  ASSERT_NE(fusion, nullptr) << l.module.to_string();
  EXPECT_EQ(fusion->metadata.op_type, "aten::relu") << l.module.to_string();
  EXPECT_EQ(fusion->metadata.source_line, line);
  // Inside, each fused instruction keeps its own op.
  bool saw_multiply = false;
  for (const HloInstruction& in : fusion->fused_computation->instructions) {
    if (in.opcode != HloOpcode::kMultiply) continue;
    saw_multiply = true;
    EXPECT_EQ(in.metadata.op_type, "aten::mul");
  }
  EXPECT_TRUE(saw_multiply) << l.module.to_string();
}

// An execution error is "[...] index 15 is out of range ... (from <op> called
// from <file>:<line>)" on the interpreter and the CPU backend alike.
void expect_names_the_line(const Lowered& l, const std::string& message_part, const std::string& origin) {
  for (const std::string& backend : {std::string("interpreter"), std::string("cpu")}) {
    try {
      backend::make_compiler(backend)->compile(l.module)->execute(l.arguments);
      ADD_FAILURE() << backend << ": the out-of-range index did not throw";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(message_part), std::string::npos) << backend << ": " << what;
      EXPECT_NE(what.find("(from " + origin + ")"), std::string::npos) << backend << ": " << what;
    }
  }
}

TEST(OpMetadata, AnIndexOutOfRangeNamesTheEmbeddingsLine) {
  Tensor table = from_vector(std::vector<float>(24, 1.0f), {12, 2});
  Tensor ids = from_vector(std::vector<int64_t>{3, 15}, {2});
  const int line = __LINE__ + 1;
  Tensor rows = embedding(table, ids);
  expect_names_the_line(lower({rows}), "index 15 is out of range for dimension 0 of size 12",
                        "aten::embedding called from op_metadata_test.cpp:" + std::to_string(line));
}

// Target 4 in row 0 of [3, 4] logits: row*C + target = 4 is a valid flat
// index (row 1's first logit), so only the explicit check catches it.
TEST(OpMetadata, ACrossEntropyTargetOutOfRangeFailsNamingItsLine) {
  Tensor logits = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  for (int64_t bad : {int64_t{4}, int64_t{-1}}) {
    Tensor target = from_vector(std::vector<int64_t>{bad, 1, 2}, {3});
    const int line = __LINE__ + 1;
    Tensor loss = cross_entropy(logits, target);
    expect_names_the_line(lower({loss}), "index " + std::to_string(bad) + " is out of range for dimension 0 of size 4",
                          "aten::gather called from op_metadata_test.cpp:" + std::to_string(line));
  }
}

TEST(OpMetadata, CrossEntropyWithTargetsInRangeAndIgnoredIsUnchanged) {
  // torch.nn.functional.cross_entropy(torch.arange(12.).reshape(3, 4), torch.tensor([3, -100, 0]))
  // = mean(logsumexp(row) - row[target]) over rows 0 and 2 = (0.4401897 + 3.4401897) / 2.
  Tensor logits = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor loss = cross_entropy(logits, from_vector(std::vector<int64_t>{3, -100, 0}, {3}));
  EXPECT_NEAR(loss.item(), 1.9401897, 1e-6);
}

// Lazily, the failure reaches the user at the next synchronising call with the
// op's line, which is not the line of that call.
TEST(OpMetadata, AFailedStepNamesTheOpsLineAtTheRead) {
  Tensor table = from_vector(std::vector<float>(8, 1.0f), {4, 2});
  const int line = __LINE__ + 1;
  Tensor rows = embedding(table, from_vector(std::vector<int64_t>{9}, {1})) + 1.0;
  try {
    rows.to_vector<float>();
    FAIL() << "expected the failed execution to be reported";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("index 9 is out of range"), std::string::npos) << what;
    EXPECT_NE(what.find("aten::embedding called from op_metadata_test.cpp:" + std::to_string(line)), std::string::npos) << what;
  }
  lazy::wait_device_ops();
}

// An instruction inside a fusion that runs on the interpreter (an integer
// divide: generated kernels refuse it) names its own op, once.
TEST(OpMetadata, AFailureInsideAnInterpretedFusionNamesTheInnerOpOnce) {
  hlo::HloBuilder b("int_div");
  const Shape s = {4};
  const int x = b.parameter(s, DType::kInt64);
  const int y = b.parameter(s, DType::kInt64);
  b.set_metadata({"aten::floor_divide", "/src/model.py", 3, -1});
  const int q = b.binary(HloOpcode::kDivide, x, y);
  b.set_metadata({"aten::add", "/src/model.py", 4, -1});
  const int sum = b.binary(HloOpcode::kAdd, q, b.full(1.0, s, DType::kInt64));
  Lowered l{b.build({sum}), {}};
  for (const std::vector<int64_t>& v : {std::vector<int64_t>{8, 6, 4, 2}, std::vector<int64_t>{1, 2, 0, 4}}) {
    runtime::Buffer buffer(s, DType::kInt64);
    std::copy(v.begin(), v.end(), buffer.data<int64_t>());
    l.arguments.push_back(buffer);
  }
  for (const std::string& backend : {std::string("interpreter"), std::string("cpu")}) {
    try {
      backend::make_compiler(backend)->compile(l.module)->execute(l.arguments);
      ADD_FAILURE() << backend << ": the division by zero did not throw";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("integer division by zero (from aten::floor_divide called from model.py:3)"), std::string::npos) << backend << ": " << what;
      EXPECT_EQ(what.find("(from "), what.rfind("(from ")) << backend << ": one origin only: " << what;
    }
  }
}

// One executable serves every call site that builds the same graph (eager ops
// by their signature); the error names the line that ran, not the first one.
TEST(OpMetadata, ACachedExecutableNamesTheLineOfTheTraceThatRan) {
  lazy::ExecutionModeGuard guard(lazy::ExecutionMode::kDebugEager);
  Tensor table = from_vector(std::vector<float>(8, 1.0f), {4, 2});
  Tensor good = embedding(table, from_vector(std::vector<int64_t>{1, 2}, {2}));  // compiles the op
  EXPECT_EQ(good.to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
  Tensor ids = from_vector(std::vector<int64_t>{1, 7}, {2});
  const int line = __LINE__ + 2;
  try {
    Tensor bad = embedding(table, ids);
    FAIL() << "the out-of-range index did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("index 7 is out of range"), std::string::npos) << what;
    EXPECT_NE(what.find("(from aten::embedding called from op_metadata_test.cpp:" + std::to_string(line) + ")"), std::string::npos) << what;
    EXPECT_EQ(what.find("op_metadata_test.cpp:" + std::to_string(line - 5)), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace lazytrain
