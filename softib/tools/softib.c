/* placeholder until the device lands (issue 3) */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "softib: not built yet\n");
    return 1;
}
