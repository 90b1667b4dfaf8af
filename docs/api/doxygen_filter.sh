#!/usr/bin/env bash
# Doxygen INPUT_FILTER for membridge's headers (scripts/docs): puts every declaration of
# include/membridge/<module>/*.hpp in that module's group (docs/api/modules.dox) and turns the header's
# opening comment ("// membridge/<module>/<name>.hpp: what it holds") into the file's documentation.
# Line numbers are kept (warnings point at the real lines): the group opens on line 1 and the file's
# documentation is appended after the last line. Relies on the headers' namespace lines as clang-format
# writes them ("namespace membridge::cuda {" ... "}  // namespace membridge::cuda"); a header that
# differs makes Doxygen warn about unbalanced grouping, which fails scripts/docs.
set -euo pipefail
file=$1
case "$file" in
  */include/membridge/*/*.hpp) module=$(basename "$(dirname "$file")") ;;
  *) module=core ;;  # membridge.hpp, and the generated config.hpp / version.hpp
esac
awk -v module="$module" '
  NR == 1 { printf "/** \\addtogroup %s */ /** @{ */ ", module }
  # Namespace members (functions, enums, variables) join a group only from inside their namespace:
  # the group opens again right after "namespace membridge... {" and closes before its closing line.
  /^}  \/\/ namespace membridge/ { printf "/** @} */ " }
  { printf "%s", $0 }
  /^namespace membridge[a-z:]* \{$/ { printf " /** \\addtogroup %s */ /** @{ */", module }
  { printf "\n" }
  # The opening comment block, without its "// membridge/x/y.hpp: " prefix.
  !done && /^\/\// { line = $0; sub(/^\/\/ ?/, "", line); if (NR == 1) sub(/^[^:]*: */, "", line);
                     about = about " " line; next }
  { done = 1 }
  END {
    print "/** @} */"
    print "/** \\file"
    print " *  \\ingroup " module
    print " *  \\brief " about
    print " */"
  }' "$file"
