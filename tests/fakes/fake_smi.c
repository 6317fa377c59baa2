/* fake_smi.c - placeholder for the fake nvidia-smi */
#include <stdio.h>
int main(void)
{
    fputs("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", stdout);
    return 9;
}
