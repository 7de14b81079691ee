#include "core/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/mapped_file.h"

namespace geniex {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (name + "." + std::to_string(::getpid())))
      .string();
}

TEST(RegularFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = temp_path("regular_file_fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A blocking open would hang here: no process ever writes to the FIFO.
  auto f = RegularFile::open(fifo);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("is a FIFO (named pipe)"), std::string::npos)
      << f.status().message();
  auto m = MappedFile::open(fifo);  // models open through here
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(fifo), std::string::npos);
  std::filesystem::remove(fifo);
}

TEST(RegularFile, DevicesAndDirectoriesAreRefusedByName) {
  auto dev = RegularFile::open("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("/dev/zero is a character device"), std::string::npos)
      << dev.status().message();
  auto dir = RegularFile::open(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos);
  auto missing = RegularFile::open(temp_path("regular_file_absent"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(RegularFile, ReadAllIsBoundedBeforeReading) {
  const std::string path = temp_path("regular_file_text");
  { std::ofstream(path, std::ios::binary) << "hello, world"; }
  auto f = RegularFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->size(), 12u);
  auto all = f->read_all(12, "text file");
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(*all, "hello, world");
  auto over = f->read_all(11, "text file");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("at most 11"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(RegularFile, ReadAllReadsFilesThatReportNoSize) {
  // /proc files are regular with st_size 0; they are read to their end, still bounded.
  auto f = RegularFile::open("/proc/self/status");
  if (!f.ok()) GTEST_SKIP() << "no /proc";
  auto all = f->read_all(1 << 20, "file");
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_NE(all->find("Name:"), std::string::npos);
  EXPECT_FALSE(f->read_all(8, "file").ok());
}

}  // namespace
}  // namespace geniex
