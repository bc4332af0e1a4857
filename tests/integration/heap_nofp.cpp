// heap_nofp.cpp - heap stacks of libstdc++ containers without frame
// pointers (built -O2 -fomit-frame-pointer, no qprof marker). main ->
// run_work -> four callers, each allocating through libstdc++ (operator new,
// which calls malloc): vec_path fills 1,500 std::vector<char> of 4 KiB,
// map_path inserts 3,000 nodes of about 1 KiB into a std::map, str_path
// reserves 1,500 std::string of 2,000 characters, churn makes and drops
// 2,000 std::vector<char> of 64 KiB. It prints its pid, and on "work"
// (stdin) runs them and prints "ok" and the bytes each caller still holds
// by its own count (sizes as libstdc++ asks operator new for them); it
// exits at end of input.
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#define NOINLINE __attribute__((noinline, noipa))

using Blob = std::array<char, 1000>;
using Map = std::map<int, Blob>;
static std::vector<char> vecs[1500];
static Map tree;
static std::string strs[1500];

NOINLINE size_t vec_path()
{
	size_t bytes = 0;

	for (auto &v : vecs) {
		v.assign(4096, 'v');
		bytes += v.capacity();
	}
	return bytes;
}

NOINLINE size_t map_path()
{
	for (int i = 0; i < 3000; i++)
		tree.emplace(i, Blob{});
	return tree.size() * sizeof(std::_Rb_tree_node<Map::value_type>);
}

NOINLINE size_t str_path()
{
	size_t bytes = 0;

	for (auto &s : strs) {
		s.reserve(2000);
		s.assign(1999, 's');
		bytes += s.capacity() + 1;
	}
	return bytes;
}

NOINLINE size_t churn()
{
	volatile char sink = 0;

	for (int i = 0; i < 2000; i++) {
		std::vector<char> tmp(65536, 'c');

		sink += tmp[i];
	}
	(void)sink;
	return 0;
}

NOINLINE void run_work()
{
	size_t v = vec_path(), m = map_path(), s = str_path(), c = churn();

	std::printf("ok {\"vec_path\": %zu, \"map_path\": %zu, \"str_path\": %zu, \"churn\": %zu}\n", v, m, s, c);
	std::fflush(stdout);
}

int main()
{
	char line[64];

	std::printf("{\"pid\": %d}\n", (int)getpid());
	std::fflush(stdout);
	while (std::fgets(line, sizeof(line), stdin))
		if (!std::strncmp(line, "work", 4))
			run_work();
	return 0;
}
