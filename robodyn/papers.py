"""The five source papers, as users know them: by authors and title.

Everything a user reads (CLI help, reports, docs, `robodyn reproduce`) cites a paper through
:func:`cite` (short form, e.g. "Ni et al. 2024, white shark optimizer") or :func:`reference`
(full form). The keys are what code uses internally; users never see them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    key: str
    authors: tuple[str, ...]
    year: int
    title: str
    venue: str
    doi: str = ""
    topic: str = ""  # a few words that say what robodyn takes from it

    @property
    def short(self) -> str:
        family = [a.split()[0] for a in self.authors]
        who = {1: family[0], 2: " & ".join(family)}.get(len(family), f"{family[0]} et al.")
        return f"{who} {self.year}"

    def cite(self) -> str:
        return f"{self.short}, {self.topic}" if self.topic else self.short

    def reference(self) -> str:
        authors = ", ".join(self.authors)
        doi = f", doi:{self.doi}" if self.doi else ""
        return f"{authors} ({self.year}). {self.title}. {self.venue}{doi}."


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("wso", ("Ni Hongjie", "Zhang Linfeng", "Jin Zhehao", "Zhu Huazhong", "Liu Andong"), 2024,
          "Dynamic parameter identification of a seven-degree-of-freedom manipulator based on the white shark "
          "optimizer", "Chinese High Technology Letters 34(5)", "10.3772/j.issn.1002-0470.2024.05.007",
          "white shark optimizer identification of a Franka arm"),
    Paper("stepwise", ("Chen Feixiang", "Li Chenggang", "Chu Yadong", "Wang Jian", "Yue Yunshuang"), 2021,
          "Stepwise parameter identification scheme for flexible joint robot", "Machine Building & Automation "
          "2021(6):166-169", "", "stepwise identification of flexible-joint robots"),
    Paper("icpso", ("Zhong Peisi", "Wang Xiangwen", "Zhang Chao", "Zhang Zhenyu", "Wang Xiao", "Liu Jinming"), 2023,
          "Robot dynamic parameter identification based on chaotic particle swarm optimization algorithm",
          "Instrument Technique and Sensor 2023(8):107-113", "", "chaotic PSO excitation design for a SCARA"),
    Paper("ur10e", ("Mamedov Shamil", "Mikhel Stanislav"), 2020,
          "Practical aspects of model-based collision detection (UR10e identification, as walked through in a "
          "practitioner's blog on its dynamic_calibration repository)", "Frontiers in Robotics and AI 7:571574",
          "10.3389/frobt.2020.571574", "UR10e identification walk-through"),
    Paper("calibration", ("Li Haiwang", "Sui Chunping", "Wang Yukun", "Shan Tianya", "Huo Shaoda"), 2023,
          "Kinematics application calibration method of collaborative robot",
          "Journal of University of Chinese Academy of Sciences 40(4):555-565", "10.7523/j.ucas.2021.0083",
          "UR5 kinematic calibration with joint stiffness"),
)}


def paper(key: str) -> Paper:
    try:
        return PAPERS[key]
    except KeyError:
        raise KeyError(f"unknown paper {key!r}; known: {sorted(PAPERS)}") from None


def cite(key: str) -> str:
    """Short citation for help texts and tables: 'Ni et al. 2024, white shark optimizer ...'."""
    return paper(key).cite()


def reference(key: str) -> str:
    """Full reference: authors (year). Title. Venue, doi."""
    return paper(key).reference()
