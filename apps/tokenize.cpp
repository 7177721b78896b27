// `lazytrain tokenize`: the tokens and ids of a text under any of lazytrain's
// tokenizers (WordPiece, SentencePiece, GPT-2's byte-level BPE).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"

namespace lazytrain::apps {

void add_tokenize_command(CLI::App& app, TokenizeOptions& o) {
  CLI::App* c = app.add_subcommand("tokenize", "Print the tokens and ids of a text under a tokenizer (WordPiece, SentencePiece, byte-level BPE)");
  c->add_option("--tokenizer", o.tokenizer,
                "The tokenizer's files: a directory with vocab.json and merges.txt (GPT-2), spm.model (SentencePiece) or vocab.txt (BERT)")
      ->required();
  CLI::Option* text = c->add_option("--text", o.text, "The text to tokenize");
  CLI::Option* input = c->add_option("--input", o.input, "A file to tokenize, read whole as UTF-8, exactly as it is");
  text->excludes(input);
  c->add_flag("--json", o.json, "Print one JSON object {\"ids\": [...], \"tokens\": [...]} for the whole input");
  c->add_flag("--add_special_tokens", o.add_special_tokens, "Add the tokenizer's special tokens ([CLS] ... [SEP], <s> ... </s>; none for GPT-2)");
}

int tokenize(const TokenizeOptions& o) {
  if (!o.text && o.input.empty()) throw Error("[tokenize] give the text: --text TEXT or --input FILE");
  std::string text = o.text.value_or("");
  if (!o.input.empty()) {
    std::ifstream in(o.input, std::ios::binary);
    if (!in || std::filesystem::is_directory(o.input)) throw Error("[tokenize] cannot read --input '" + o.input + "': expected a text file");
    std::ostringstream whole;
    whole << in.rdbuf();
    text = whole.str();
  }
  const std::unique_ptr<data::Tokenizer> tokenizer = data::AutoTokenizer::from_files(o.tokenizer);
  const std::vector<int64_t> ids = tokenizer->encode(text, o.add_special_tokens);
  std::vector<std::string> tokens;
  for (int64_t id : ids) tokens.push_back(tokenizer->convert_id_to_token(id));
  if (o.json) {
    const nlohmann::json out = {{"ids", ids}, {"tokens", tokens}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%lld\t%s\n", static_cast<long long>(ids[i]), tokens[i].c_str());
  }
  return 0;
}

}  // namespace lazytrain::apps
