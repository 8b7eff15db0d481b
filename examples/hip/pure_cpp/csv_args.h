// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// csv_args: a tiny command-line and CSV helper written in plain C++17.
//
// It is used next to the cuda examples to summarise benchmark logs, but it
// does not touch the GPU at all: nothing here needs the CUDA toolkit, and a
// porting tool should leave this file exactly as it is. The word "cuda" in
// these comments is prose, not an API name.

#ifndef HIPPORT_EXAMPLES_CSV_ARGS_H
#define HIPPORT_EXAMPLES_CSV_ARGS_H

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace csvargs {

// Parsed command line: `--key=value`, `--key value`, bare `--flag`, and
// positional arguments (anything not starting with "--").
class ArgParser {
public:
    ArgParser(int argc, const char* const* argv);

    bool has(const std::string& key) const;
    std::string get(const std::string& key, const std::string& fallback) const;
    long get_int(const std::string& key, long fallback) const;
    double get_double(const std::string& key, double fallback) const;

    const std::vector<std::string>& positional() const { return positional_; }
    const std::string& program() const { return program_; }

private:
    std::string program_;
    std::map<std::string, std::string> options_;
    std::vector<std::string> positional_;
};

// One CSV record. Quoted fields may contain the separator and doubled quotes
// ("" inside quotes stands for a single quote character).
using Row = std::vector<std::string>;

// Split a single line into fields. Returns false on an unterminated quote.
bool split_csv_line(const std::string& line, char sep, Row& out);

struct Table {
    Row header;
    std::vector<Row> rows;

    // Index of a named column, or -1 if the header has no such column.
    int column(const std::string& name) const;
};

// Read a whole CSV stream. The first non-empty line is the header. Lines
// starting with '#' are comments (our cuda benchmark logs use them for the
// device name and driver version).
bool read_csv(const std::string& path, char sep, Table& table,
              std::string& error);

struct ColumnStats {
    std::size_t count = 0;
    std::size_t skipped = 0;  // non-numeric cells
    double min = 0.0;
    double max = 0.0;
    double mean = 0.0;
    double stddev = 0.0;
};

ColumnStats summarise(const Table& table, int column);

}  // namespace csvargs

#endif  // HIPPORT_EXAMPLES_CSV_ARGS_H
