#include "cli/command.hpp"

int main(int argc, char** argv) { return gpubank::cli::run(argc, argv); }
