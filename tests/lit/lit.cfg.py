# lit configuration of initc's IR and driver tests.
import os
import lit.formats

config.name = "initc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.initc_obj_root, "tests", "lit")

# initc's tools first, then FileCheck, not and count from LLVM.
path = [config.initc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
config.environment["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "")])
config.substitutions.append(("%initc_src", config.initc_src_root))
config.substitutions.append(("%initc_generated_docs", config.initc_generated_docs_dir))
