"""A small hipify-perl script in the exact format ROCm installs (see porting-facts.md, "hipify-perl, as installed
with ROCm"), for the hipify-perl tests to write to disk."""

SAMPLE = r'''#!/usr/bin/perl -w

##
# Copyright (c) 2015-present Advanced Micro Devices, Inc. All rights reserved.
##
#usage hipify-perl [OPTIONS] INPUT_FILE

use Getopt::Long;
use File::Basename;

my $whitelist = "";
my $fileName = "";
my %ft;

my %deprecated_funcs = (
    "cudaThreadSynchronize" => "10.0",
    "cudaThreadExit" => "10.0",
    "cusparseXcsrsort_bufferSizeExt" => "",
    "cudaNotKnownAnywhere" => "11.0",
);

my %removed_funcs = (
    "cudaThreadExit" => "12.0",
    "cudaBindTexture" => "12.0",
);

my %experimental_funcs = (
    "cudaStreamGetCaptureInfo_v3" => "6.5.0",
);

$mapped = 0;

sub subst {
    my ($a, $b, $t) = @_;
    my $subst = s/\b$a\b/$b/g;
    if ($subst) {
        $ft{$t} += $subst;
    }
}

sub experimentalSubstitutions {
    subst("cudaStreamGetCaptureInfo_v3", "hipStreamGetCaptureInfo_v3", "stream");
}

sub rocSubstitutions {
    subst("cublasSgemm", "rocblas_sgemm", "library");
    subst("cublasFancyOnlyRoc", "rocblas_fancy", "library");
    subst("cublas_v2.h", "rocblas.h", "include_cuda_main_header");
}

sub simpleSubstitutions {
    subst("cudaMalloc", "hipMallocOverride", "memory");
    subst("cudaMalloc", "hipIgnoredSecond", "memory");
    subst("cudaThreadSynchronize", "hipDeviceSynchronize", "thread");
    subst("cudaThreadExit", "hipDeviceReset", "thread");
    subst("cublasSgemm", "hipblasSgemm", "library");
    subst("cudaBrandNewApi", "hipBrandNewApi", "memory");
    subst("cudaDeviceFlushGPUDirectRDMAWrites", "hipDeviceFlushGPUDirectRDMAWrites", "device");
    subst("CUDA_ARRAY3D_2DARRAY", "hipArrayLayered", "numeric_literal");
    subst("cuda_runtime.h", "hip\/hip_runtime.h", "include_cuda_main_header");
    subst("cublas_v2.h", "hipblas.h", "include_cuda_main_header");
    subst("cudaNewLib.h", "hipnewlib\/hipnewlib.h", "include");
    subst("weird name", "x", "memory");
}

# CUDA Kernel Launch Syntax
sub transformKernelLaunch {
    no warnings qw/uninitialized/;
    my $k = 0;
    $k += s/(\w+)\s*<<<\s*(.+?)\s*>>>\s*\(\s*\)/hipLaunchKernelGGL($1, $2, 0)/g;
    return $k;
}

sub warnUnsupportedFunctions {
    my $line_num = shift;
    my $k = 0;
    foreach $func (
        "cudaBindTexture",
        "cudaGraphicsGLRegisterBuffer",
        "cudaTotallyUnsupported"
    )
    {
        # match math at the beginning of a word, but not if it already has a namespace qualifier ('::') :
        my $mt = m/($func)/g;
        if ($mt) {
            $k += $mt;
            print STDERR "  warning: $fileName:$line_num: unsupported device function \"$func\": $_\n";
        }
    }
    return $k;
}

sub warnHipOnlyUnsupportedFunctions {
    my $line_num = shift;
    my $k = 0;
    foreach $func (
        "cublasFancyOnlyRoc"
    )
    {
        my $mt = m/($func)/g;
    }
    return $k;
}

sub warnRocOnlyUnsupportedFunctions {
    my $line_num = shift;
    my $k = 0;
    foreach $func (
        "cudaMalloc"
    )
    {
        my $mt = m/($func)/g;
    }
    return $k;
}

sub warnUnsupportedDeviceFunctions {
    my $line_num = shift;
    my $k = 0;
    foreach $func (
        "__nv_weird_intrinsic",
        "_Pow_int"
    )
    {
        my $mt = m/($func)/g;
    }
    return $k;
}
'''
