// tapevm's exception hierarchy. User mistakes and bad data throw a subclass of
// tapevm::Error whose message names what was wrong and where; broken internal invariants
// abort instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tapevm {

/// Base of every exception tapevm throws on bad input or misuse.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A tape (built from parts or loaded) breaks an invariant: unknown op, operand not
/// earlier than its slot, constant or output out of range, ...
class InvalidTape : public Error {
public:
    using Error::Error;
};

/// A .tape file is malformed. `offset()` is the byte offset of the offending field in the
/// file and `field()` its name ("header.n_instructions", "instruction[3].b", "checksum").
class FormatError : public Error {
public:
    FormatError(std::uint64_t offset, std::string field, const std::string& what)
        : Error("tape file: byte " + std::to_string(offset) + ": " + field + ": " + what), offset_(offset),
          field_(std::move(field)) {}
    std::uint64_t offset() const noexcept { return offset_; }
    const std::string& field() const noexcept { return field_; }

private:
    std::uint64_t offset_;
    std::string field_;
};

/// A buffer handed to an evaluation has the wrong size. The message names the argument,
/// the expected size and the given size.
class ShapeError : public Error {
public:
    ShapeError(const std::string& where, const std::string& argument, std::size_t expected, std::size_t given)
        : Error(where + ": " + argument + " has " + std::to_string(given) + " values, expected " +
                std::to_string(expected)),
          expected_(expected), given_(given) {}
    std::size_t expected() const noexcept { return expected_; }
    std::size_t given() const noexcept { return given_; }

private:
    std::size_t expected_;
    std::size_t given_;
};

/// Misuse of the recording API: a Var used outside record(), Vars of two tapes mixed,
/// a wrong number of results.
class RecordingError : public Error {
public:
    using Error::Error;
};

/// A request the chosen backend or tape cannot serve (gradient of a tape with several
/// outputs, a precision the backend lacks, ...).
class Unsupported : public Error {
public:
    using Error::Error;
};

/// No device can run the request: no Vulkan loader or device, no device matching
/// TAPEVM_DEVICE, a device without what the request needs. The message gives the reason.
class DeviceUnavailable : public Error {
public:
    using Error::Error;
};

/// The device failed while working (VK_ERROR_DEVICE_LOST, out of memory in the middle of
/// submitting work): the evaluation did not complete and the backend that threw is dead.
class DeviceLost : public Error {
public:
    using Error::Error;
};

/// Not enough device memory even for the smallest unit of work (one workgroup's chunk): the
/// evaluation did not start, no input was touched, and the backend stays usable (the same call
/// succeeds once memory is free).
class OutOfMemory : public Error {
public:
    using Error::Error;
};

}  // namespace tapevm
