// The C++ interpreter of the op rules (op_rules.h). Its messages are
// mirrored word for word by python/my_ops/_rules.py; tests/ops/test_rules.py
// runs every rule through both.
#include "op_rules.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "export.h"
#include "overlap.h"

namespace my_ops {
namespace {

std::vector<const OpRules *> &all_rules() {
    static std::vector<const OpRules *> rules;
    return rules;
}

std::string trim(const std::string &s) {
    const auto begin = s.find_first_not_of(" \t");
    if (begin == std::string::npos) return "";
    return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(s);
    while (std::getline(in, part, sep)) parts.push_back(trim(part));
    return parts;
}

// An integer of a rule (`>=N`, `dim=N`): the whole word, as Python's int() reads it.
int64_t rule_integer(const std::string &word) {
    size_t used = 0;
    int64_t value = 0;
    try {
        value = std::stoll(word, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (word.empty() || used != word.size() || std::isspace(static_cast<unsigned char>(word[0])))
        throw std::invalid_argument("'" + word + "' is not an integer");
    return value;
}

int index_of(const std::vector<OpRules::Param> &params, const std::string &name) {
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name == name) return static_cast<int>(i);
    throw std::invalid_argument("rules name an unknown argument '" + name + "'");
}

// "a, b or c"
std::string or_list(const std::vector<std::string> &items) {
    std::string text;
    for (size_t i = 0; i < items.size(); ++i)
        text += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
    return text;
}

// One clause of p's rules, as written: `key`, `key=value` or `key>=N`. A word in
// another form than its clause's is a bad definition: read anyway, it would check
// something else (`rows=x` as `rows=cols(x)`, `dim=f(3)` as `dim=3`) or nothing (`like`
// with no argument to compare with passes every call). _rules.py's _parse_clause and
// _CLAUSES mirror this, message for message.
OpRules::Clause parse_clause(const std::string &word, const OpRules::Param &p,
                             const std::vector<OpRules::Param> &params) {
    enum class Takes { Nothing, Number, Words, Argument };
    struct Form {
        const char *key;
        const char *kind;  // the kind of argument the clause applies to
        Takes takes;       // what follows its '=' (or its '>=': a Number)
        std::vector<std::string> fns;  // Argument: "" a bare name, else a function of it
    };
    // (local: OpRules of other files are built during static initialisation, maybe first)
    static const Form forms[] = {
        {"like", "Tensor", Takes::Argument, {""}},
        {"like_or_wider", "Tensor", Takes::Argument, {""}},
        {"shape", "Tensor", Takes::Argument, {"", "last", "half"}},
        {"rows", "Tensor", Takes::Argument, {"cols"}},
        {"apart", "Tensor", Takes::Argument, {""}},
        {"apart_or_same", "Tensor", Takes::Argument, {""}},
        {"scale", "Tensor", Takes::Argument, {""}},
        {"dim>=", "Tensor", Takes::Number, {}},
        {"dim", "Tensor", Takes::Number, {}},
        {"even", "Tensor", Takes::Nothing, {}},
        {"written", "Tensor", Takes::Nothing, {}},
        {"eps", "float", Takes::Argument, {""}},
        {"one_of", "str", Takes::Words, {}},
        {">=", "int", Takes::Number, {}},
    };
    OpRules::Clause c;
    std::string value;
    bool has_value = true;
    const auto ge = word.find(">="), eq = word.find('=');
    if (ge != std::string::npos) {
        c.key = word.substr(0, ge) + ">=";
        value = word.substr(ge + 2);
    } else if (eq != std::string::npos) {
        c.key = word.substr(0, eq);
        value = word.substr(eq + 1);
    } else {
        c.key = word;
        has_value = false;
    }
    const Form *form = nullptr;
    for (const Form &f : forms)
        if (c.key == f.key) form = &f;
    if (form == nullptr) throw std::invalid_argument("unknown clause '" + word + "'");
    if (p.kind != form->kind)
        throw std::invalid_argument("clause '" + word + "' does not apply to the " + p.kind +
                                    " argument '" + p.name + "'");
    const auto refuse = [&](const std::string &needs) {
        throw std::invalid_argument("clause '" + word + "' " + needs);
    };
    switch (form->takes) {
    case Takes::Nothing:
        if (has_value) refuse("takes no value: " + c.key);
        break;
    case Takes::Number:
        // (only `dim` can lack it: a `>=` clause's key ends where its number starts)
        if (!has_value) refuse("needs a number: " + c.key + "=<N>");
        c.number = rule_integer(value);
        break;
    case Takes::Words:
        if (value.empty() || value.front() == '|' || value.back() == '|' ||
            value.find("||") != std::string::npos)
            refuse("needs words separated by '|', none empty");
        c.ref = value;  // the words, '|'-separated
        break;
    case Takes::Argument: {
        // `name` or `fn(name)`: a '(' after a function's name, and ')' last
        const auto open = value.find('(');
        if (open != std::string::npos && open > 0 && value.back() == ')') {
            c.fn = value.substr(0, open);
            c.ref = value.substr(open + 1, value.size() - open - 2);
        } else {
            c.ref = value;
        }
        const auto &fns = form->fns;
        if (c.ref.empty() || c.ref.find_first_of("()") != std::string::npos ||
            std::find(fns.begin(), fns.end(), c.fn) == fns.end()) {
            std::vector<std::string> written;
            for (const auto &fn : fns)
                written.push_back(c.key + "=" + (fn.empty() ? "<argument>" : fn + "(<argument>)"));
            refuse("needs an argument to compare with: " + or_list(written));
        }
        c.ref_index = index_of(params, c.ref);
        // (a clause comparing with a non-tensor would be skipped by the check)
        if (params[c.ref_index].kind != "Tensor")
            refuse("compares with the " + params[c.ref_index].kind + " argument '" + c.ref +
                   "': it needs a tensor argument");
        break;
    }
    }
    return c;
}

[[noreturn]] void bad_definition(const char *schema, const std::string &what) {
    // Static initialisation: nothing can catch this, and a wrong rule is a bug of my_ops.
    std::fprintf(stderr, "my_ops: bad op definition '%s': %s\n", schema, what.c_str());
    std::abort();
}

my_ops_view view_of(const api::Tensor &t) {
    return my_ops_view{t.dim(), t.sizes().data(), t.strides().data(),
                       static_cast<int64_t>(t.element_size()),
                       static_cast<int64_t>(reinterpret_cast<std::intptr_t>(t.const_data_ptr()))};
}

bool same_view(const api::Tensor &a, const api::Tensor &b) {
    if (a.const_data_ptr() != b.const_data_ptr() || a.dim() != b.dim()) return false;
    for (int64_t k = 0; k < a.dim(); ++k)
        if (a.size(k) != b.size(k) || a.stride(k) != b.stride(k)) return false;
    return true;
}

std::string shape_text_of(const std::vector<int64_t> &sizes) {
    std::string text = "[";
    for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
    return text + "]";
}

// The tensor's layout. torch 2.10's stable Tensor has no layout() (2.11's
// headers add it, as an inline call of this same C shim function), so the
// stable binding asks the C shim, which 2.10 exports: one source builds
// against the stable headers of every torch from 2.10 on.
api::Layout layout_of(const api::Tensor &t) {
#ifdef MY_OPS_STABLE_ABI
    int32_t code = 0;
    if (aoti_torch_get_layout(t.get(), &code) != AOTI_TORCH_SUCCESS)
        throw std::runtime_error("my_ops: the C shim could not read a tensor's layout");
    using L = api::Layout;
    const std::pair<int32_t, L> layouts[] = {{aoti_torch_layout_strided(), L::Strided},
                                             {aoti_torch_layout_sparse_coo(), L::Sparse},
                                             {aoti_torch_layout_sparse_csr(), L::SparseCsr},
                                             {aoti_torch_layout_sparse_csc(), L::SparseCsc},
                                             {aoti_torch_layout_sparse_bsr(), L::SparseBsr},
                                             {aoti_torch_layout_sparse_bsc(), L::SparseBsc},
                                             {aoti_torch_layout__mkldnn(), L::Mkldnn},
                                             {aoti_torch_layout_jagged(), L::Jagged}};
    for (const auto &known : layouts)
        if (known.first == code) return known.second;
    return L::NumOptions;  // a layout newer than these names: not strided, named by number below
#else
    return t.layout();
#endif
}

std::string layout_text(api::Layout layout) {
    switch (layout) {
    case api::Layout::Strided: return "torch.strided";
    case api::Layout::Sparse: return "torch.sparse_coo";
    case api::Layout::SparseCsr: return "torch.sparse_csr";
    case api::Layout::SparseCsc: return "torch.sparse_csc";
    case api::Layout::SparseBsr: return "torch.sparse_bsr";
    case api::Layout::SparseBsc: return "torch.sparse_bsc";
    case api::Layout::Mkldnn: return "torch._mkldnn";
    default: return "layout " + std::to_string(static_cast<int>(layout));
    }
}

// The float dtypes wider than `dtype` (holding each of its values), narrowest first.
std::vector<api::ScalarType> wider_floats(api::ScalarType dtype) {
    using S = api::ScalarType;
    switch (dtype) {
    case S::Half:
    case S::BFloat16: return {S::Float, S::Double};
    case S::Float: return {S::Double};
    default: return {};
    }
}

std::string number_text(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

}  // namespace

std::string shape_text(const api::Tensor &t) { return shape_text_of(api::sizes_of(t)); }

std::string dtype_text(api::ScalarType dtype) {
    using S = api::ScalarType;
    switch (dtype) {
    case S::Byte: return "torch.uint8";
    case S::Char: return "torch.int8";
    case S::Short: return "torch.int16";
    case S::Int: return "torch.int32";
    case S::Long: return "torch.int64";
    case S::Half: return "torch.float16";
    case S::Float: return "torch.float32";
    case S::Double: return "torch.float64";
    case S::ComplexHalf: return "torch.complex32";
    case S::ComplexFloat: return "torch.complex64";
    case S::ComplexDouble: return "torch.complex128";
    case S::Bool: return "torch.bool";
    case S::BFloat16: return "torch.bfloat16";
    case S::Float8_e5m2: return "torch.float8_e5m2";
    case S::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case S::Float8_e5m2fnuz: return "torch.float8_e5m2fnuz";
    case S::Float8_e4m3fnuz: return "torch.float8_e4m3fnuz";
    case S::Float8_e8m0fnu: return "torch.float8_e8m0fnu";
    case S::UInt16: return "torch.uint16";
    case S::UInt32: return "torch.uint32";
    case S::UInt64: return "torch.uint64";
    default: return "dtype " + std::to_string(static_cast<int>(dtype));
    }
}

std::string device_text(const api::Tensor &t) {
    const auto device = t.device();
    switch (device.type()) {
    case api::DeviceType::CPU: return "cpu";
    case api::DeviceType::CUDA: return "cuda:" + std::to_string(static_cast<int>(device.index()));
    case api::DeviceType::Meta: return "meta";
    default: return "device type " + std::to_string(static_cast<int>(device.type()));
    }
}

OpRules::OpRules(const char *schema, const char *rules, bool listed)
    : schema_(schema), rules_(rules) {
    if (!listed) {
        parse();
        return;
    }
    try {
        parse();
    } catch (const std::invalid_argument &e) {
        bad_definition(schema, e.what());
    }
    all_rules().push_back(this);
}

void OpRules::parse() {
    const std::string text(schema_);
    // the argument list: from the first '(' to the last ')' before "->" ("Tensor(a!)" has its own)
    const auto open = text.find('('), close = text.rfind(')', text.find("->"));
    if (open == std::string::npos || close == std::string::npos)
        throw std::invalid_argument("no (...)");
    name_ = trim(text.substr(0, open));
    for (const auto &arg : split(text.substr(open + 1, close - open - 1), ',')) {
        if (arg.empty()) continue;
        const auto space = arg.find_last_of(' ');
        // (torch's schema parser refuses these too, at registration; this reader
        // also serves _C.check_rules, where nothing registers the schema)
        if (space == std::string::npos)
            throw std::invalid_argument("argument '" + arg + "' needs a type and a name");
        Param p;
        p.name = arg.substr(space + 1);
        p.name = p.name.substr(0, p.name.find('='));  // drop a default value
        for (const Param &before : params_)
            if (before.name == p.name)
                throw std::invalid_argument("two arguments named '" + p.name + "'");
        std::string type = arg.substr(0, space);
        const auto alias = type.find('(');  // drop an alias annotation: "Tensor(a!)?" is "Tensor?"
        if (alias != std::string::npos) type.erase(alias, type.find(')', alias) - alias + 1);
        p.optional = !type.empty() && type.back() == '?';
        p.kind = p.optional ? type.substr(0, type.size() - 1) : type;
        if (p.kind != "Tensor" && p.kind != "float" && p.kind != "int" && p.kind != "bool" &&
            p.kind != "str")
            throw std::invalid_argument(
                "argument '" + p.name +
                "' has a type the rules do not take "
                "(Tensor, float, int, bool or str, each optionally with ?)");
        p.is_tensor = p.kind == "Tensor";
        params_.push_back(p);
    }
    for (const auto &entry : split(rules_, ';')) {
        if (entry.empty()) continue;
        const auto colon = entry.find(':');
        if (colon == std::string::npos)
            throw std::invalid_argument("rule without 'arg:': " + entry);
        Param &p = params_[index_of(params_, trim(entry.substr(0, colon)))];
        for (const auto &word : split(entry.substr(colon + 1), ' ')) {
            if (word.empty()) continue;
            p.clauses.push_back(parse_clause(word, p, params_));
        }
    }
}

void OpRules::fail(const std::string &message) const {
    throw std::runtime_error("my_ops." + name_ + ": " + message);
}

void OpRules::check(const Arg *args, size_t count) const {
    if (count != params_.size()) fail("internal error: wrong number of checked arguments");
    // Each tensor's own properties first, so that the relations below compare valid tensors.
    for (size_t i = 0; i < count; ++i) {
        const Arg &arg = args[i];
        const Param &p = params_[i];
        if (!p.is_tensor) continue;
        // (None reaches a `Tensor` argument through torch.ops as an undefined tensor)
        if (arg.tensor == nullptr || !arg.tensor->defined()) {
            if (p.optional) continue;
            fail("expected " + p.name + " to be a tensor, but got None");
        }
        const api::Tensor &t = *arg.tensor;
        const api::Layout layout = layout_of(t);
        if (layout != api::Layout::Strided)
            fail("expected " + p.name + " to be a dense (strided) tensor, but got layout " +
                 layout_text(layout));
        const auto dtype = t.scalar_type();
        // (a `scale=` argument's own clause names the one dtype it takes)
        const bool is_scale = std::any_of(p.clauses.begin(), p.clauses.end(),
                                          [](const Clause &c) { return c.key == "scale"; });
        if (!is_scale && dtype != api::ScalarType::Float && dtype != api::ScalarType::Double &&
            dtype != api::ScalarType::Half && dtype != api::ScalarType::BFloat16)
            fail("expected " + p.name +
                 " to be a float32, float64, float16 or bfloat16 tensor, but got " +
                 dtype_text(dtype));
        if (!t.is_cpu() && !t.is_cuda())
            fail("expected " + p.name + " to be on the CPU or a CUDA device, but got " +
                 device_text(t));
    }
    for (size_t i = 0; i < count; ++i) {
        const Arg &arg = args[i];
        const Param &p = params_[i];
        if (p.is_tensor) {
            if (arg.tensor != nullptr && arg.tensor->defined()) check_tensor(p, *arg.tensor, args);
            continue;
        }
        if (!arg.present) continue;  // None
        for (const Clause &c : p.clauses) {
            if (c.key == "eps" && !(std::isfinite(arg.number) && arg.number >= 0.0))
                fail("expected " + p.name + " to be a finite number >= 0, but got " +
                     number_text(arg.number));
            // (`eps=x`: x of 16 or 32 bits adds eps in float32, where a value outside its
            // range would become 0 or inf: NaN for a zero row, 0 for every row)
            if (c.key == "eps" && arg.number != 0.0 &&
                !(arg.number >= std::numeric_limits<float>::denorm_min() &&
                  arg.number <= std::numeric_limits<float>::max())) {
                const api::Tensor *x = args[c.ref_index].tensor;
                if (x == nullptr || !x->defined() || x->scalar_type() != api::ScalarType::Double)
                    fail("expected " + p.name + " to be 0 or from 1.4e-45 to 3.4e+38 (float32's " +
                         "range, in which the kernels add it to " + c.ref + " of 16 or 32 bits), " +
                         "but got " + number_text(arg.number));
            }
            if (c.key == "one_of") check_one_of(p, c, *arg.text);
            if (c.key == ">=" && arg.integer < c.number)
                fail("expected " + p.name + " to be >= " + std::to_string(c.number) + ", but got " +
                     std::to_string(arg.integer));
        }
    }
}

void OpRules::check_one_of(const Param &p, const Clause &c, const std::string &value) const {
    const auto words = split(c.ref, '|');
    if (std::find(words.begin(), words.end(), value) != words.end()) return;
    std::vector<std::string> quoted;
    for (const auto &word : words) quoted.push_back("'" + word + "'");
    fail("expected " + p.name + " to be " + or_list(quoted) + ", but got '" + value + "'");
}

void OpRules::check_tensor(const Param &p, const api::Tensor &t, const Arg *args) const {
    const std::string &n = p.name;
    for (const Clause &c : p.clauses) {
        const api::Tensor *ref = c.ref_index >= 0 ? args[c.ref_index].tensor : nullptr;
        const std::string &r = c.ref;
        // (a named argument that is None, an optional tensor not given, or no tensor: the
        // clause passes, as in _rules.py, rather than dereference a null `ref`)
        if (c.ref_index >= 0 && (ref == nullptr || !ref->defined())) continue;
        if (c.key == "like" || c.key == "like_or_wider") {
            // messages are built only on failure: check() runs on every call
            const auto dtype = t.scalar_type(), ref_dtype = ref->scalar_type();
            if (dtype != ref_dtype) {
                const auto wider =
                    c.key == "like" ? std::vector<api::ScalarType>{} : wider_floats(ref_dtype);
                bool ok = false;
                std::string also;
                for (const auto w : wider) {
                    ok = ok || dtype == w;
                    also += (also.empty() ? " or a wider float dtype (" : ", ") + dtype_text(w);
                }
                if (!also.empty()) also += ")";
                if (!ok)
                    fail("expected " + n + " to have the same dtype as " + r + " (" +
                         dtype_text(ref_dtype) + ")" + also + ", but got " + dtype_text(dtype));
            }
            if (!(t.device() == ref->device()))
                fail("expected " + n + " to be on the same device as " + r + " (" +
                     device_text(*ref) + "), but got " + device_text(t));
        } else if (c.key == "scale") {
            if (t.scalar_type() != api::ScalarType::Float || t.numel() != 1)
                fail("expected " + n + " to be a float32 tensor of one element, but got a " +
                     dtype_text(t.scalar_type()) + " tensor of shape " + shape_text(t));
            if (!(t.device() == ref->device()))
                fail("expected " + n + " to be on the same device as " + r + " (" +
                     device_text(*ref) + "), but got " + device_text(t));
        } else if (c.key == "dim>=") {
            if (t.dim() < c.number)
                fail("expected " + n + " to have at least " + std::to_string(c.number) +
                     (c.number == 1 ? " dimension" : " dimensions") + ", but got a " +
                     std::to_string(t.dim()) + "-D tensor");
        } else if (c.key == "dim") {
            if (t.dim() != c.number)
                fail("expected " + n + " to be " + std::to_string(c.number) + "-D, but got " +
                     std::to_string(t.dim()) + "-D shape " + shape_text(t));
        } else if (c.key == "shape") {
            std::vector<int64_t> want = api::sizes_of(*ref);
            if (c.fn == "last") {
                want = {ref->dim() > 0 ? ref->size(-1) : 1};
            } else if (c.fn == "half") {
                if (!want.empty()) want.back() /= 2;
            }
            const auto sizes = t.sizes();
            if (!std::equal(sizes.begin(), sizes.end(), want.begin(), want.end())) {
                const std::string why = c.fn == "last" ? " (the last dimension of " + r + ")"
                                        : c.fn == "half"
                                            ? " (" + r + " with its last dimension halved)"
                                            : std::string();
                fail("expected " + n + " to have " +
                     (c.fn.empty() ? "the same shape as " + r + " " : std::string("shape ")) +
                     shape_text_of(want) + why + ", but got " + shape_text(t));
            }
        } else if (c.key == "even") {
            if (t.dim() > 0 && t.size(-1) % 2 != 0)
                fail("expected the last dimension of " + n + " to be even, but got " +
                     std::to_string(t.size(-1)));
        } else if (c.key == "rows") {
            if (t.size(0) != ref->size(1))
                fail("expected " + n + " to have " + std::to_string(ref->size(1)) +
                     " rows (the columns of " + r + "), but got shape " + shape_text(t));
        } else if (c.key == "written") {
            const my_ops_view v = view_of(t);
            if (my_ops_internal_overlap(&v) != MY_OPS_NO_OVERLAP)
                fail(n +
                     " is written in place, so its elements must not share memory (it looks "
                     "like an expanded or broadcast view); pass a tensor of its own, e.g. " +
                     n + ".clone()");
        } else if (c.key == "apart" || c.key == "apart_or_same") {
            const bool allow_same = c.key == "apart_or_same";
            if (allow_same && same_view(t, *ref)) continue;
            const my_ops_view a = view_of(*ref), b = view_of(t);
            if (my_ops_views_overlap(&a, &b) != MY_OPS_NO_OVERLAP) {
                if (allow_same)
                    fail(n + " overlaps " + r + " without being the same tensor; pass " + n + "=" +
                         r + " itself or a tensor that shares no memory with it");
                fail(r + " and " + n +
                     " must not share memory, but they overlap; pass separate "
                     "tensors (e.g. " +
                     n + ".clone())");
            }
        }
    }
}

}  // namespace my_ops

// "op<TAB>rules" lines of every op, for python/my_ops/_rules.py (through my_ops._C).
extern "C" MY_OPS_API const char *my_ops_op_rules(void);
extern "C" MY_OPS_API const char *my_ops_op_rules(void) {
    static std::string text;
    text.clear();
    for (const my_ops::OpRules *op : my_ops::all_rules()) {
        text += op->name();
        text += '\t';
        text += op->rules_text();
        text += '\n';
    }
    return text.c_str();
}

namespace {

// A value of my_ops_check_rules that its argument's kind cannot read.
struct BadValue : std::runtime_error {
    using std::runtime_error::runtime_error;
};

BadValue bad_value(const my_ops::OpRules::Param &p, const std::string &text) {
    return BadValue("bad value '" + text + "' for the " + p.kind + " argument '" + p.name + "'");
}

// The whole text, as Python's int() and float() read a value's repr: no prefix, no overflow.
int64_t int_value(const my_ops::OpRules::Param &p, const std::string &text) {
    char *end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
        end != text.c_str() + text.size() || errno == ERANGE)
        throw bad_value(p, text);
    return static_cast<int64_t>(value);
}

double float_value(const my_ops::OpRules::Param &p, const std::string &text) {
    char *end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    // (ERANGE is left alone: an underflow to 0 or an overflow to inf is a value too)
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ||
        end != text.c_str() + text.size())
        throw bad_value(p, text);
    return value;
}

bool bool_value(const my_ops::OpRules::Param &p, const std::string &text) {
    if (text != "True" && text != "False") throw bad_value(p, text);
    return text == "True";
}

}  // namespace

// For tests (tests/ops/test_rules.py, through my_ops._C.check_rules): the rules of
// a schema that no op has, checked on scalar arguments given as text, one line
// each ("None", an int, True/False, a float, a str). Returns "" where they pass,
// else the refusal ("bad definition: ..." for a malformed text, "bad value ..."
// for a value its argument's kind cannot read).
extern "C" MY_OPS_API const char *my_ops_check_rules(const char *schema, const char *rules,
                                                     const char *values);
extern "C" MY_OPS_API const char *my_ops_check_rules(const char *schema, const char *rules,
                                                     const char *values) {
    static std::string result;
    result.clear();
    try {
        const my_ops::OpRules op(schema, rules, /*listed=*/false);
        std::vector<std::string> texts;
        std::istringstream in(values);
        for (std::string line; std::getline(in, line);) texts.push_back(line);
        if (texts.size() != op.params().size()) throw std::runtime_error("one value per argument");
        std::vector<my_ops::Arg> args;
        for (size_t i = 0; i < texts.size(); ++i) {
            const my_ops::OpRules::Param &p = op.params()[i];
            const std::string &text = texts[i];
            if (text == "None")
                args.emplace_back();
            else if (p.kind == "int")
                args.emplace_back(int_value(p, text));
            else if (p.kind == "bool")
                args.emplace_back(bool_value(p, text));
            else if (p.kind == "float")
                args.emplace_back(float_value(p, text));
            else if (p.kind == "str")
                args.emplace_back(text);
            else
                throw bad_value(p, text);
        }
        op.check(args.data(), args.size());
    } catch (const BadValue &e) {
        result = e.what();
    } catch (const std::invalid_argument &e) {
        result = std::string("bad definition: ") + e.what();
    } catch (const std::exception &e) {
        result = e.what();
    }
    return result.c_str();
}
