// An AOTInductor package (.pt2) of a model that calls my_ops ops, run from a
// LibTorch program without Python:
//
//   run_aoti_package LIBMY_OPS PACKAGE INPUTS OUTPUTS DEVICE ARITY
//
// LIBMY_OPS: the wheel's kernel library (`python -m my_ops --cmake-prefix`
//   names its folder), or "none" to see what happens without it. Loading it
//   registers the ops with the dispatcher, through which the package calls
//   them (its proxy executor); it must be loaded before the package is.
// INPUTS: a list of tensors saved with torch.save, taken ARITY at a time:
//   one call of the model per group, on DEVICE ("cpu", "cuda", "cuda:1"). A
//   device with an index also loads the package onto that device (the
//   loader's device_index): a CUDA package compiled on cuda:0 runs on cuda:1.
// OUTPUTS: a tuple written with torch::pickle_save (torch.load reads it): for each
//   call, its outputs, then its inputs as they are after the call (a model
//   may update its inputs in place), all on the CPU.
//
// MY_OPS_VERSION (a compile definition: find_package(my_ops)'s my_ops_VERSION)
//   is the kernel library's version. A package records the my_ops version
//   that compiled it (metadata "my_ops_version"); the program refuses one
//   the library may not serve (see check_my_ops_version).
//
// Exits 0 when every call ran; prints the error and exits 1 otherwise.
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

std::vector<char> read_file(const char *path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw std::runtime_error(std::string("cannot read ") + path);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_file(const char *path, const std::vector<char> &data) {
    std::ofstream file(path, std::ios::binary);
    file.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!file) throw std::runtime_error(std::string("cannot write ") + path);
}

// A version's order, for the versions my_ops makes ("1.2.0", "1.2.1.dev202611270300",
// "1.2.0+cu130"): major.minor.patch (a missing part counts as 0, the first part that is
// not a number ends them), then its development stamp, a release after every one of its
// development versions (PEP 440). The local label ("+cu130") does not count.
std::array<long long, 4> order_of(const std::string &version) {
    const std::string public_version = version.substr(0, version.find('+'));
    std::array<long long, 4> order{0, 0, 0, std::numeric_limits<long long>::max()};
    std::istringstream parts(public_version);
    std::string part;
    for (int i = 0; i < 3; ++i) {
        if (!std::getline(parts, part, '.') || part.empty() ||
            part.find_first_not_of("0123456789") != std::string::npos)
            break;
        order[i] = std::stoll(part);
    }
    const auto dev = public_version.find(".dev");
    if (dev != std::string::npos) order[3] = std::atoll(public_version.c_str() + dev + 4);
    return order;
}

// The package calls my_ops' ops through the dispatcher and passes their
// arguments by name: torch drops an argument the library's schema lacks and
// gives a missing one its default, silently. So a package needs a library of
// the my_ops major version that compiled it, at least as new (a release adds
// ops and arguments with defaults, never renames or removes one within a major).
void check_my_ops_version(const std::unordered_map<std::string, std::string> &metadata,
                          const std::string &library_version) {
    const auto recorded = metadata.find("my_ops_version");
    if (recorded == metadata.end()) {
        std::fprintf(stderr,
                     "warning: the package does not record the my_ops version that compiled it "
                     "(inductor_configs={\"aot_inductor.metadata\": {\"my_ops_version\": "
                     "my_ops.__version__}}): not checked against the kernel library's, %s\n",
                     library_version.c_str());
        return;
    }
    // (a nightly's package needs that nightly or a later one: nightlies add arguments too)
    const auto package = order_of(recorded->second), library = order_of(library_version);
    if (package[0] != library[0] || package > library)
        throw std::runtime_error(
            "the package was compiled with my_ops " + recorded->second +
            ", but the kernel library is my_ops " + library_version +
            ": a package needs a kernel library of the same major version, at least as new " +
            "(install my_ops " + recorded->second +
            " or later within its major version, or recompile the package with this my_ops)");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s LIBMY_OPS PACKAGE INPUTS OUTPUTS DEVICE ARITY\n", argv[0]);
        return 2;
    }
    const std::string library = argv[1];
    if (library != "none" && !dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        std::fprintf(stderr, "error: dlopen: %s\n", dlerror());
        return 1;
    }
    try {
        const c10::Device device(argv[5]);
        const long arity = std::strtol(argv[6], nullptr, 10);
        // (-1: the current device; its index for "cuda:1")
        const c10::DeviceIndex device_index = device.has_index() ? device.index() : -1;
        // before the loader, which looks up every op the package calls: a package of a newer
        // my_ops that calls an op this library lacks is told so, not "Could not find schema"
        if (library != "none")
            check_my_ops_version(
                torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(argv[2],
                                                                                    "model"),
                MY_OPS_VERSION);
        torch::inductor::AOTIModelPackageLoader loader(argv[2], "model", false, 1, device_index);

        const auto inputs = torch::jit::pickle_load(read_file(argv[3])).toList();
        if (arity <= 0 || inputs.size() % arity != 0)
            throw std::runtime_error("INPUTS does not hold whole groups of ARITY tensors");
        std::vector<c10::IValue> results;
        for (size_t first = 0; first < inputs.size(); first += arity) {
            std::vector<at::Tensor> call;
            for (long k = 0; k < arity; ++k)
                call.push_back(inputs.get(first + k).toTensor().to(device));
            const auto outputs = loader.run(call);
            for (const auto &output : outputs) results.push_back(output.cpu());
            for (const auto &input : call) results.push_back(input.cpu());
            std::printf("call %zu: ran on %s, output on %s\n", first / arity, device.str().c_str(),
                        outputs.empty() ? "-" : outputs.front().device().str().c_str());
        }
        write_file(argv[4],
                   torch::jit::pickle_save(c10::ivalue::Tuple::create(std::move(results))));
    } catch (const std::exception &e) {
        const std::string message = e.what();
        std::fprintf(stderr, "error: %s\n", message.c_str());
        // torch names the op it did not find, not what would provide it
        if (message.find("Could not find schema for my_ops::") != std::string::npos)
            std::fprintf(
                stderr,
                "hint: the package calls my_ops ops: load my_ops' kernel library (dlopen of "
                "`python -m my_ops --cmake-prefix`/libmy_ops.so) before loading the package\n");
        return 1;
    }
    return 0;
}
