// GenieX for Android: an AAR with the Java API (the geniex-java sources, shared, not copied) and
// libgeniex_jni.so built by the NDK from the project's CMake for arm64-v8a and x86_64. Written on
// paper: the Android Gradle plugin is on Google's Maven, which this project cannot reach (see
// README.md for what was and was not run).
plugins {
  id("com.android.library") version "8.7.3"
  `maven-publish`
}

android {
  namespace = "dev.geniex"
  compileSdk = 35
  ndkVersion = "27.2.12479018"  // r27: 16 KB page-aligned .so by default

  defaultConfig {
    minSdk = 26
    consumerProguardFiles("consumer-rules.pro")
    ndk {
      abiFilters += listOf("arm64-v8a", "x86_64")  // phones + emulators
    }
    externalNativeBuild {
      cmake {
        targets += listOf("geniex_jni")
        arguments += listOf(
          "-DGENIEX_BUILD_JAVA=ON",
          "-DGENIEX_BUILD_TOOLS=OFF",
          "-DGENIEX_BUILD_TESTS=OFF",
          "-DGENIEX_BUILD_PYTHON=OFF",
          "-DANDROID_STL=c++_shared",
          // 16 KB pages (Android 15+ devices): align the LOAD segments.
          "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-z,max-page-size=16384",
        )
      }
    }
  }

  externalNativeBuild {
    cmake {
      path = file("../../CMakeLists.txt")
      version = "3.25.1"
    }
  }

  sourceSets {
    getByName("main") {
      // The same sources as the Maven module geniex-java (Java 11 API level, D8-safe).
      java.srcDirs("../java/geniex-java/src/main/java")
    }
  }

  compileOptions {
    sourceCompatibility = JavaVersion.VERSION_11
    targetCompatibility = JavaVersion.VERSION_11
  }

  packaging {
    jniLibs {
      useLegacyPackaging = false  // stored uncompressed and page-aligned in the APK
    }
  }

  publishing {
    singleVariant("release") {
      withSourcesJar()
    }
  }
}

publishing {
  publications {
    register<MavenPublication>("release") {
      groupId = "dev.geniex"
      artifactId = "geniex-android"
      version = "0.1.0-SNAPSHOT"
      afterEvaluate { from(components["release"]) }
    }
  }
}
