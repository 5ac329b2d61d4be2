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
// A package records the my_ops version that compiled it (metadata
//   "my_ops_version"); the program asks the kernel library it loaded whether
//   it serves that version (my_ops_package_problem) and refuses the package
//   otherwise.
//
// Exits 0 when every call ran; prints the error and exits 1 otherwise.
#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
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

// The package's recorded my_ops version, checked by the kernel library that was
// loaded (`library`, dlopen's handle): its my_ops_package_problem() knows its own
// version and the rule (docs/deploying.md, section 4).
void check_my_ops_version(const std::unordered_map<std::string, std::string> &metadata,
                          void *library) {
    using Version = const char *(*)();
    using Problem = const char *(*)(const char *, const char *);
    const auto version = reinterpret_cast<Version>(dlsym(library, "my_ops_version"));
    const auto problem = reinterpret_cast<Problem>(dlsym(library, "my_ops_package_problem"));
    if (version == nullptr || problem == nullptr)
        throw std::runtime_error(
            "the kernel library has no my_ops_version(): a my_ops older than "
            "the package's check; install the my_ops that compiled the package");
    const auto recorded = metadata.find("my_ops_version");
    if (recorded == metadata.end()) {
        std::fprintf(stderr,
                     "warning: the package does not record the my_ops version that compiled it "
                     "(inductor_configs={\"aot_inductor.metadata\": {\"my_ops_version\": "
                     "my_ops.__version__}}): not checked against the kernel library's, %s\n",
                     version());
        return;
    }
    const std::string refusal = problem(recorded->second.c_str(), nullptr);
    if (!refusal.empty()) throw std::runtime_error(refusal);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s LIBMY_OPS PACKAGE INPUTS OUTPUTS DEVICE ARITY\n", argv[0]);
        return 2;
    }
    const std::string library = argv[1];
    void *handle = nullptr;
    if (library != "none" && !(handle = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL))) {
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
        if (handle != nullptr)
            check_my_ops_version(
                torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(argv[2],
                                                                                    "model"),
                handle);
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
        if (message.find("Could not find schema for my_ops::") != std::string::npos) {
            using Version = const char *(*)();
            const auto version =
                handle ? reinterpret_cast<Version>(dlsym(handle, "my_ops_version")) : nullptr;
            if (version != nullptr)  // loaded, and it passed the version check: an older build
                std::fprintf(stderr,
                             "hint: the kernel library loaded (my_ops %s) lacks an op the package "
                             "calls: it is older than the my_ops that compiled the package (a "
                             "development build of the same version?); recompile the package "
                             "with this my_ops, or load the my_ops that compiled it\n",
                             version());
            else
                std::fprintf(
                    stderr,
                    "hint: the package calls my_ops ops: load my_ops' kernel library (dlopen of "
                    "`python -m my_ops --cmake-prefix`/libmy_ops.so) before loading the package\n");
        }
        return 1;
    }
    return 0;
}
