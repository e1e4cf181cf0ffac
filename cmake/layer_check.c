/*
 * layer_check.c - the main() of the layer checks (src/CMakeLists.txt,
 * tc_layer): each check links every object of one layer with only the layers
 * below it, so that an upward call is an undefined symbol and fails the
 * build. It is never run.
 */
int main(void)
{
    return 0;
}
