void f() { hipFree(0); }
