// attnviz-cli architectures: the table of architectures attnviz opens (core/arch/architectures.h),
// one line each, or with --markdown the tables of docs/formats.md "Families" as they are generated.
#include <iostream>
#include <memory>

#include "arch/architectures.h"
#include "arch/config.h"
#include "commands.h"

namespace attnviz::cli {

Command addArchitecturesCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "architectures", "list the architectures attnviz opens (family, class, kind, tutorial)");
  auto markdown = std::make_shared<bool>(false);
  cmd->add_flag("--markdown", *markdown,
                "print docs/formats.md's tables of families and tensor names instead");
  return {cmd, [markdown] {
            if (*markdown) {
              std::cout << architecturesMarkdown();
              return 0;
            }
            for (const auto& a : architectures())
              std::cout << a.family << "\t" << a.model << "\t" << architectureName(a.arch) << "\t"
                        << a.title << "\n";
            return 0;
          }};
}

}  // namespace attnviz::cli
