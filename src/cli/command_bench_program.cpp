// tapevm bench, tapevm adbench: the benchmark program tapevm-bench, run as a child process
// with the same arguments, so that tapevm itself links neither the benchmark harness nor its
// peers. tapevm-bench is looked for in the folder of the running program only (the build's
// src/cli/, or the installed bindir), never on PATH, so one build never runs another's.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.hpp"
#include "tapevm/error.hpp"

extern char** environ;

namespace tapevm::cli {
namespace {

namespace fs = std::filesystem;

/// tapevm-bench beside the running program; throws Unsupported when it is not there.
fs::path bench_program() {
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    if (error)
        throw Unsupported(
            "tapevm bench: cannot find this program's folder (/proc/self/exe: " + error.message() + ")");
    fs::path program = self.parent_path() / "tapevm-bench";
    if (access(program.c_str(), X_OK) != 0) {
        throw Unsupported(
            "tapevm was built without the benchmark (meson option bench): no program tapevm-bench in " +
            self.parent_path().string());
    }
    return program;
}

struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// Copies what the child wrote into `file` to `out`.
void copy_file(std::FILE* file, std::ostream& out) {
    std::rewind(file);
    char buffer[65536];
    std::size_t size;
    while ((size = std::fread(buffer, 1, sizeof buffer, file)) > 0)
        out.write(buffer, static_cast<std::streamsize>(size));
}

/// Runs `tapevm-bench command args...` and returns its exit status (128 + the signal that
/// ended it, as shells report). Its output goes straight to this process's stdout and stderr
/// when `out` and `err` are std::cout and std::cerr, else into temporary files copied to
/// `out` and `err` once it ends (tests run the CLI in-process with string streams).
int run_bench_program(std::string_view command, std::span<const std::string_view> args, std::ostream& out,
                      std::ostream& err) {
    const fs::path program = bench_program();
    std::vector<std::string> words{program.string(), std::string(command)};
    for (const std::string_view arg : args) words.emplace_back(arg);
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);

    const bool inherit = &out == &std::cout && &err == &std::cerr;
    File out_file, err_file;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!inherit) {
        out_file.reset(std::tmpfile());
        err_file.reset(std::tmpfile());
        if (!out_file || !err_file) {
            posix_spawn_file_actions_destroy(&actions);
            throw Error(std::string("tapevm bench: cannot make a temporary file: ") + std::strerror(errno));
        }
        posix_spawn_file_actions_adddup2(&actions, fileno(out_file.get()), STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&actions, fileno(err_file.get()), STDERR_FILENO);
    }
    out.flush();
    err.flush();
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw Error("cannot run " + program.string() + ": " + std::strerror(spawned));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw Error("waiting for " + program.string() + ": " + std::strerror(errno));
    }
    if (!inherit) {
        copy_file(out_file.get(), out);
        copy_file(err_file.get(), err);
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 2;
}

int run_bench(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    // `tapevm bench --nn ...` is `tapevm bench-nn ...` (command_bench_nn.cpp, in this program).
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] != "--nn") continue;
        std::vector<std::string_view> rest(args.begin(), args.end());
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
        return bench_nn_command().run(rest, out, err);
    }
    return run_bench_program("bench", args, out, err);
}

int run_adbench(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    return run_bench_program("adbench", args, out, err);
}

}  // namespace

// The summaries are tapevm-bench's (command_bench.cpp, command_adbench.cpp); the help is its
// own: `tapevm help bench` runs `tapevm-bench bench --help`.
Command bench_program_command() {
    return {"bench",
            "time the workloads on every backend against native code, checked against the reference",
            {},
            run_bench};
}

Command adbench_program_command() {
    return {"adbench",
            "ADBench bundle adjustment: objective and sparse Jacobian times, checked",
            {},
            run_adbench};
}

}  // namespace tapevm::cli
