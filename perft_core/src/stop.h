// The stop request of a CPU count (Ctrl-C, SIGTERM, a deadline), shared by the extension's
// translation units: _core.cpp (perft, divide) and zobrist.cpp (the counts through tables).
#pragma once
#include <pybind11/pybind11.h>

#include <csignal>

#include "host.h"

namespace pc_host {

extern "C" inline void pc_stop_handler(int sig) { g_stop.store(sig, std::memory_order_relaxed); }

// The stop request of one count (see stop_requested in src/host.h): its deadline (max_seconds > 0)
// and, for a count that can be long (depth >= 5) made from Python's main thread, SIGINT and SIGTERM
// handlers that ask it to stop. Python's own handlers would run only once the call returned;
// finish() puts them back and hands them the signal, so Ctrl-C still raises KeyboardInterrupt and
// SIGTERM still does what it did, within a few milliseconds instead of at the end of the count.
class StopScope {
  public:
    StopScope(int depth, double max_seconds) {
        // A limit past the steady clock's range in int64 nanoseconds (4e9 s, 127 years; inf too) is
        // never reached: no deadline (the cast overflowed, and 1e10 s stopped a count at once).
        const double ns = max_seconds * 1e9;
        t_deadline_ns = max_seconds > 0 && ns < 4e18 ? steady_ns() + (std::int64_t)ns : 0;
        if (depth < 5 || !main_thread()) return;
        g_stop.store(0);
        t_stop = &g_stop;
        struct sigaction sa {};
        sa.sa_handler = pc_stop_handler;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 2; ++i) {
            sigaction(kSignals[i], nullptr, &old_[i]);
            if (old_[i].sa_handler == SIG_IGN) continue;  // an ignored signal stays ignored
            sigaction(kSignals[i], &sa, nullptr);
            installed_[i] = true;
        }
    }
    StopScope(const StopScope&) = delete;
    StopScope& operator=(const StopScope&) = delete;
    ~StopScope() { restore(); }

    // With the GIL held, after the count: nothing if it ran to the end; else the signal goes to
    // Python's handler (KeyboardInterrupt for Ctrl-C) or, at a deadline, CountStopped(message,
    // [(uci, nodes)] of the root moves counted in full) is raised.
    void finish(py::list partial = py::list()) {
        if (!stop_requested()) return;
        const int sig = g_stop.exchange(0);
        restore();
        if (sig > 0) {
            std::raise(sig);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        }
        PyErr_SetObject(stopped_type().ptr(),
                        py::make_tuple(sig > 0 ? "stopped by a signal" : "stopped at its deadline", partial).ptr());
        throw py::error_already_set();
    }

    static py::object& stopped_type() {
        static py::object t;
        return t;
    }

  private:
    static constexpr int kSignals[2] = {SIGINT, SIGTERM};
    struct sigaction old_[2] {};
    bool installed_[2] = {false, false};

    static bool main_thread() {
        py::module_ threading = py::module_::import("threading");
        py::object main = threading.attr("main_thread")().attr("ident"), me = threading.attr("get_ident")();
        return main.equal(me);
    }

    void restore() {
        for (int i = 0; i < 2; ++i)
            if (installed_[i]) sigaction(kSignals[i], &old_[i], nullptr);
        installed_[0] = installed_[1] = false;
        t_deadline_ns = 0;
        t_stop = nullptr;
    }
};

}  // namespace pc_host
