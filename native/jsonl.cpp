// The part of the JSON line reader that needs Python: a number read as float() reads it,
// where the C++ library has no std::from_chars for doubles.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "jsonl.hpp"

namespace lmlog {

double to_double(std::string_view digits) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    double value;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(),
                                              value);
    if (error == std::errc::result_out_of_range) throw Declined();  // msgspec refuses it
    if (error != std::errc() || end != digits.data() + digits.size()) throw Declined();
    return value;
#else
    const std::string text(digits);
    const PyGILState_STATE state = PyGILState_Ensure();  // event_columns released it
    const double value = PyOS_string_to_double(text.c_str(), nullptr, nullptr);
    const bool failed = value == -1.0 && PyErr_Occurred();
    if (failed) PyErr_Clear();
    PyGILState_Release(state);
    if (failed) throw Declined();
    return value;
#endif
}

}  // namespace lmlog
