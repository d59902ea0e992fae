/* Wine 8.0 (Debian 12) lacks bcryptprimitives.dll, whose ProcessPrng every
 * Go >= 1.22 program for Windows calls at start. This stub provides it over
 * RtlGenRandom (advapi32's SystemFunction036). mk/wine.mk builds it with
 * mingw-w64 and copies it into the Wine prefix's system32 (Go loads it from
 * the system folder only). Used for the tests under Wine, never shipped. */
#include <windows.h>

BOOLEAN NTAPI SystemFunction036(PVOID buf, ULONG len);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
