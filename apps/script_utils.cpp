#include "apps/script_utils.h"

#include <filesystem>

#include "core/error.h"

namespace lazytrain::apps {

namespace fs = std::filesystem;

void require_file(const std::string& command, const std::string& path, const std::string& flag) {
  if (path.empty()) throw Error("[" + command + "] " + flag + " is required");
  if (fs::is_directory(path)) throw Error("[" + command + "] " + flag + " '" + path + "' is a directory; expected a text file");
  if (!fs::is_regular_file(path)) throw Error("[" + command + "] " + flag + " '" + path + "' does not exist or is not a file");
}

}  // namespace lazytrain::apps
