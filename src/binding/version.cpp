// This kernel library's version, and which AOTInductor packages it serves, for
// programs that load it without Python (docs/deploying.md): a package records the
// my_ops version that compiled it, and the serving program asks the library it
// actually loaded, not the my_ops it was built against.
#include <array>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "export.h"

namespace {

// A version's order, for the versions my_ops makes ("1.2.0", "1.2.1.dev202611270300",
// "1.2.0+cu130"): major.minor.patch, then its development stamp, a release after every one
// of its development versions (PEP 440). The local label ("+cu130") does not count. None for
// any other form ("1.2", "1.2.0rc1", a part of more than 18 digits): my_ops makes none
// (build_support/metadata_provider.py), and an order guessed for one could serve a package
// with a library it does not fit.
std::optional<std::array<long long, 4>> order_of(const std::string &version) {
    const std::string public_version = version.substr(0, version.find('+'));
    std::array<long long, 4> order{0, 0, 0, std::numeric_limits<long long>::max()};
    std::istringstream parts(public_version);
    std::string part;
    auto number = [](const std::string &digits) {
        return !digits.empty() && digits.size() <= 18 &&
               digits.find_first_not_of("0123456789") == std::string::npos;
    };
    for (int i = 0; i < 3; ++i) {
        if (!std::getline(parts, part, '.') || !number(part)) return std::nullopt;
        order[i] = std::stoll(part);
    }
    if (std::getline(parts, part, '.')) {  // the development stamp, the last part
        if (part.rfind("dev", 0) != 0 || !number(part.substr(3)) || parts.peek() != EOF)
            return std::nullopt;
        order[3] = std::stoll(part.substr(3));
    }
    return order;
}

}  // namespace

extern "C" {

MY_OPS_API const char *my_ops_version(void);
MY_OPS_API const char *my_ops_package_problem(const char *package_version,
                                              const char *library_version);

MY_OPS_API const char *my_ops_version(void) { return MY_OPS_VERSION; }

// "" when a kernel library of my_ops `library_version` (NULL: this library) serves a
// package compiled with my_ops `package_version`; else why not, and the fix. The
// package calls the ops through the dispatcher and passes their arguments by name:
// torch drops an argument the library's schema lacks and gives a missing one its
// default, silently. So a package needs a library of the major version that compiled
// it, at least as new (a release adds ops and arguments with defaults, never renames
// or removes one within a major); a nightly's package needs that nightly or a later
// one (nightlies add arguments too).
MY_OPS_API const char *my_ops_package_problem(const char *package_version,
                                              const char *library_version) {
    thread_local std::string problem;
    const std::string package = package_version ? package_version : "";
    const std::string library = library_version ? library_version : MY_OPS_VERSION;
    const auto p = order_of(package), l = order_of(library);
    problem.clear();
    if (!p || !l)
        problem = "the package was compiled with my_ops " + package +
                  ", but the kernel library is my_ops " + library + ": " + (p ? library : package) +
                  " is not a version my_ops makes (X.Y.Z or X.Y.Z.devN), so the library cannot "
                  "tell whether it serves the package (recompile the package with this my_ops)";
    else if ((*p)[0] != (*l)[0] || *p > *l)
        problem = "the package was compiled with my_ops " + package +
                  ", but the kernel library is my_ops " + library +
                  ": a package needs a kernel library of the same major version, at least as "
                  "new (install my_ops " +
                  package +
                  " or later within its major version, or recompile the package with this "
                  "my_ops)";
    return problem.c_str();
}

}  // extern "C"
