// Loading files and directories into documents: the one place that touches the file
// system for inputs. Directories are walked recursively in sorted order (deterministic
// output), hidden entries are skipped, and only .yaml, .yml and .json files are read from
// directories; a file named explicitly is read whatever its extension (JSON by
// extension, YAML otherwise). A file reached twice (named and inside a named directory)
// is read once.
#pragma once

#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "document/reader.hpp"

namespace gpubank::doc {

// Appends the documents of every path; unreadable, missing, oversized and malformed
// files become diagnostics and the other files are still read.
void load_paths(const std::vector<std::string>& paths, std::vector<Document>& out,
                Diagnostics& diagnostics, const ReadLimits& limits = {});

// Reads one file's text; the error names the file and the reason.
Expected<std::string> read_file(const std::string& path, std::size_t max_bytes);

}  // namespace gpubank::doc
