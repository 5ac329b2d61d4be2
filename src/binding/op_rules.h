// Each op's schema and argument rules, defined once beside its kernels.
//
// The rules are a short text that two small interpreters read: this one,
// which checks the real arguments before any kernel runs, and
// python/my_ops/_rules.py, which checks the same rules (with the same
// messages) in the fake kernels, i.e. on meta tensors and while
// torch.compile traces. my_ops._C hands the rule texts to Python.
//
// Rule text: "arg: clause clause; arg: clause; ...". Every Tensor argument
// must be a dense float32/float64/float16/bfloat16 tensor on the CPU or a
// CUDA device; clauses add:
//   like=A           same dtype and device as A
//   like_or_wider=A  same device as A, and A's dtype or a wider float dtype
//                    (float16/bfloat16 < float32 < float64): a float32
//                    parameter beside 16-bit activations (mixed precision)
//   dim>=N, dim=N    number of dimensions
//   shape=A          the shape of A
//   shape=last(A)    [A.size(-1)]
//   shape=half(A)    A's shape with its last dimension halved
//   even             an even last dimension
//   rows=cols(A)     size(0) == A.size(1)
//   written          written in place: no two elements share memory
//   apart=A          shares no memory with A
//   apart_or_same=A  shares no memory with A, or is A itself (same view)
//   scale=A          a float32 tensor of one element on A's device (a
//                    quantization scale beside A)
// An optional tensor (Tensor?) that is None passes; when given, its clauses apply.
// A float argument may have the clause `eps=A`: finite and >= 0, and 0 or within
// float32's range unless the tensor A is float64 (A's kernels add it in float32
// otherwise); a float? that is None passes: the op gives it its meaning. A str argument
// may have `one_of=a|b|c`: one of those words. An int argument may have `>=N`:
// at least N. A bool argument has no clauses. Any of these may be optional
// (`int?`, ...): None passes. A clause on an argument of another kind, or an
// argument of another type (`int[]`, `SymInt`, ...), is a bad definition, as
// are a clause in another form than those above (`like` with no `=A`,
// `even=A`, `rows=A`, `dim` with no `=N`, `shape=first(A)`), an empty word in
// `one_of=`, an argument without a name and two arguments of one name.
// The dispatcher converts a scalar before any check sees it: a bool given for
// an `int` or `float` is 1 or 0, a one-element tensor its value. The Python
// API refuses a bool for a float itself (_arguments.py: float_argument);
// through torch.ops a bool passes as that number. A number in a message is
// written as the checked value (`but got 1`), by both readers.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "torch_api.h"

namespace my_ops {

// One argument of a call, as the checks see it.
struct Arg {
    Arg(const api::Tensor &t) : tensor(&t) {}  // NOLINT: implicit by design
    Arg(double v) : number(v) {}               // NOLINT
    Arg(std::optional<double> v) : number(v.value_or(0.0)), present(v.has_value()) {}  // NOLINT
    Arg(int64_t v) : integer(v) {}             // NOLINT
    Arg(std::optional<int64_t> v) : integer(v.value_or(0)), present(v.has_value()) {}  // NOLINT
    Arg(bool v) : flag(v) {}                   // NOLINT
    Arg(const std::string &s) : text(&s) {}    // NOLINT
    Arg(const char *) = delete;  // a literal would bind to Arg(bool): pass a std::string
    Arg(const std::optional<api::Tensor> &t) : tensor(t ? &*t : nullptr) {}  // NOLINT: None: null
    Arg() : present(false) {}  // None, for any optional argument
    const api::Tensor *tensor = nullptr;
    double number = 0.0;
    int64_t integer = 0;
    bool flag = false;
    const std::string *text = nullptr;
    bool present = true;  // false: None (a float?, int?, ... that passes)
};

class OpRules {
  public:
    // Parses both texts (a malformed one aborts loading with a message) and
    // records them for my_ops_op_rules(). Unlisted (my_ops_check_rules, for
    // tests): not recorded, and a malformed text throws std::invalid_argument.
    OpRules(const char *schema, const char *rules, bool listed = true);

    const char *schema() const { return schema_; }
    const char *rules_text() const { return rules_; }
    const char *name() const { return name_.c_str(); }

    // Throws std::runtime_error "my_ops.<op>: ..." for the first broken rule.
    void check(std::initializer_list<Arg> args) const { check(args.begin(), args.size()); }
    void check(const Arg *args, size_t count) const;

    // Throws "my_ops.<op>: <message>".
    [[noreturn]] void fail(const std::string &message) const;

    struct Clause {
        std::string key, ref;  // e.g. {"shape", "last", "x"} -> key "shape", fn "last", ref "x"
        std::string fn;
        int64_t number = 0;
        int ref_index = -1;
    };
    struct Param {
        std::string name;
        std::string kind;  // Tensor, float, int, bool or str
        bool is_tensor = false;
        bool optional = false;  // Tensor?, float?, ...: None passes
        std::vector<Clause> clauses;
    };

    const std::vector<Param> &params() const { return params_; }

  private:
    void parse();
    void check_one_of(const Param &p, const Clause &c, const std::string &value) const;
    void check_tensor(const Param &p, const api::Tensor &t, const Arg *args) const;

    const char *schema_;
    const char *rules_;
    std::string name_;
    std::vector<Param> params_;
};

// Text helpers shared by the messages (the same spelling as torch's Python reprs).
std::string shape_text(const api::Tensor &t);
std::string dtype_text(api::ScalarType dtype);
std::string device_text(const api::Tensor &t);

}  // namespace my_ops
