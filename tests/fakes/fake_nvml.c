/* fake_nvml.c - placeholder for the fake libnvidia-ml.so.1 */
int nvmlInit_v2(void);
int nvmlInit_v2(void)
{
    return 9;
}
