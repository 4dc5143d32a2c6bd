// Reading and writing prog/program.json (ir-spec/program-format.md).
//
// The runtime owns the format: readProgram validates everything a kernel launch relies on, so a
// program that reads without error can be run without further checks.
#pragma once

#include "initrt/base/program.h"

#include <string>

namespace initrt {

/// Reads and validates progDir/program.json, including its "checksum". On failure returns false and sets `error` to one
/// message naming the file, the field and the parameter.
bool readProgram(const std::string &progDir, Program &out, std::string &error);

/// Parses and validates program.json text; `source` names it in error messages.
bool parseProgramJson(const std::string &text, const std::string &source, Program &out,
                      std::string &error);

/// Checks a Program built in memory against the same rules readProgram applies.
bool validateProgram(const Program &program, std::string &error);

/// A config.json text as program.json carries it (an object, "hf_config") and readProgram returns
/// it in Program::hfConfig: the same JSON value with its keys sorted, indented by two spaces,
/// ending with a newline. False, with `why` (to follow a field name), when `text` is not a JSON
/// object that program.json can hold.
bool canonicalHfConfig(const std::string &text, std::string &out, std::string &why);

/// The program.json text for `program` (pretty-printed, ends with a newline).
std::string programToJson(const Program &program);

/// XXH3-64 (16 hex digits) of programToJson(program): the "checksum" that writeProgramJson adds
/// and readProgram checks.
std::string programChecksum(const Program &program);

/// Writes program.json atomically (a temporary file in the same directory, fsync, rename), with
/// a "checksum" of the rest of the document.
bool writeProgramJson(const std::string &path, const Program &program, std::string &error);

} // namespace initrt
