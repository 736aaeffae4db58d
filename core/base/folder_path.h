// Files a folder's own index names (a training run's checkpoints): each kept inside that folder,
// so that a hostile index or a symlink in the folder cannot make attnviz read a file elsewhere.
#pragma once

#include <string>

namespace attnviz {

// The resolved path of the regular file `name` (relative, no "..") inside `folder`. Throws
// Error(BadInput) "WHERE: NAME is an absolute path / goes up with .. / leads outside the folder
// (a symlink to …) / is not a file" and Error(Io) when it does not exist. `where` names the index
// (and field) in messages.
std::string fileInsideFolder(const std::string& folder, const std::string& name,
                             const std::string& where);

}  // namespace attnviz
