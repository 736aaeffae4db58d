#include "base/folder_path.h"

#include <filesystem>

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz {

std::string fileInsideFolder(const std::string& folder, const std::string& name,
                             const std::string& where) {
  namespace fs = std::filesystem;
  const std::string shown = "\"" + clipForMessage(name, 120) + "\"";
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::BadInput,
                where + ": " + shown + " " + why + "; files are named inside the folder " + folder);
  };
  const fs::path rel(name);
  if (name.empty() || name.find('\0') != std::string::npos) refuse("is not a file name");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    refuse("is an absolute path");
  for (const fs::path& part : rel)
    if (part == "..") refuse("goes up with ..");
  std::error_code ec;
  const fs::path root = fs::canonical(folder, ec);
  if (ec) throw Error(ErrorKind::Io, folder + ": cannot read the folder (" + ec.message() + ")");
  const fs::path resolved = fs::canonical(root / rel, ec);
  if (ec)
    throw Error(ErrorKind::Io,
                where + ": " + shown + " cannot be read in " + folder + " (" + ec.message() + ")");
  const fs::path inside = resolved.lexically_relative(root);
  if (inside.empty() || *inside.begin() == ".." || inside == ".")
    refuse("leads outside the folder (a symbolic link)");
  if (!fs::is_regular_file(resolved, ec)) refuse("is not a regular file");
  return resolved.string();
}

}  // namespace attnviz
