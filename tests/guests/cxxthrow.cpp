// cxxthrow.cpp - a C++ exception thrown three calls below its catch: the
// frames between are popped by the unwinder, not by rets, and the call tree
// must show them closed (crec calls --tree, crec profile).
#include <cstdio>
#include <stdexcept>

__attribute__((noinline)) int thrower(int n)
{
    if (n == 0)
        throw std::runtime_error("deep");
    return thrower(n - 1) + 1;
}

__attribute__((noinline)) int catcher()
{
    try {
        return thrower(3);
    } catch (const std::exception &e) {
        return 42;
    }
}

int main()
{
    std::printf("%d\n", catcher());
    return 0;
}
