#include "../support/ops_header.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace lazytrain::testing {

std::set<std::string> declared_functions(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot open " + path);
  std::string text, line;
  while (std::getline(f, line)) {
    if (auto p = line.find("//"); p != std::string::npos) line.erase(p);
    text += line + " ";
  }
  text = std::regex_replace(text, std::regex("\\s+"), " ");
  std::set<std::string> out;
  // The return type may be a template with several arguments (std::tuple<Tensor, Tensor>).
  const std::regex decl("^\\s*[A-Za-z_][\\w:]*(?:<[^()]*>)?\\s+(operator[^\\s(]+|\\w+)\\s*\\((.*)\\)\\s*$");
  const std::regex param("^\\s*(.*?)\\s*\\b\\w+\\s*$");
  std::stringstream statements(text);
  std::string st;
  while (std::getline(statements, st, ';')) {
    std::smatch m;
    if (!std::regex_match(st, m, decl)) continue;
    const std::string fname = m[1], params = m[2];
    if (fname == "namespace" || fname == "class" || fname == "using") continue;
    // Split the parameters at top-level commas.
    std::vector<std::string> parts;
    std::string cur;
    int depth = 0;
    for (char ch : params) {
      if (ch == '(' || ch == '<' || ch == '{') ++depth;
      if (ch == ')' || ch == '>' || ch == '}') --depth;
      if (ch == ',' && depth == 0) {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    if (!std::regex_match(cur, std::regex("^\\s*$"))) parts.push_back(cur);
    std::string sig = fname + "(";
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string p = parts[i].substr(0, parts[i].find('='));
      std::smatch pm;
      if (std::regex_match(p, pm, param)) p = pm[1];
      sig += (i ? ", " : "") + p;
    }
    out.insert(sig + ")");
  }
  return out;
}

std::string ops_header_path() { return std::string(LAZYTRAIN_SOURCE_DIR) + "/src/tensor/ops.h"; }

}  // namespace lazytrain::testing
