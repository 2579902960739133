"""Write the bundled ``sample`` collection: retrieval/collections/data/sample.jsonl.

The dialogues, the candidate sentences and their labels below were written by
hand by the dsr authors (MIT, like the project) in the SIGIR 2022 benchmark
schema: 20 Reddit-style dialogues, 10 ``plain`` and 10 ``grounded`` (the
target turn cites Wikipedia with a link), each with 10 to 50 Wikipedia-style
candidate sentences. Nothing is copied from Reddit or Wikipedia; user names,
dialogue ids and document ids are made up.

Labels: 1 when the sentence would genuinely help write the target turn, else
0. Each dialogue mixes relevant sentences (some sharing few words with the
conversation, so word overlap alone does not find them), near misses that
share many words but do not help (``Minnesota Vikings`` helmets, ``Volleyball``
invented at another YMCA), and off-topic fillers.

Fillers: each dialogue is padded to its listed size with sentences written for
dialogues of *other* topic groups (drawn with a fixed seed), labelled 0 and
keeping their ids, so, as in the SIGIR set, the same sentence appears in
several dialogues under the same id. Groups keep related topics apart (space,
science and health are one group) so a filler is never secretly relevant.

Initial scores (``candidates[].score``) come from a documented initial ranker,
so they are honest rather than invented: BM25 (``rank_bm25.BM25Okapi`` with its
defaults k1=1.5, b=0.75, epsilon=0.25) over the dialogue's own candidate
sentences (body only), query = title + every context turn, tokens from
``retrieval.text.tokenize(stopwords=True, stem=True)``. Candidates are listed
in that ranker's order (score descending, ties by id), scores rounded to 4
decimals.

Usage::

    python tools/make_sample.py            # rewrite the packaged file
    python tools/make_sample.py --check    # exit 1 when the file is not what this script writes
    python tools/make_sample.py --out FILE
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "retrieval" / "collections" / "data" / "sample.jsonl"

INITIAL_RANKER = ("BM25Okapi (rank_bm25; k1=1.5, b=0.75, epsilon=0.25) over the dialogue's "
                  "candidates; query = title + context turns; "
                  "retrieval.text.tokenize(stopwords=True, stem=True)")

#: topic group of each dialogue key; fillers only come from other groups
GROUPS = {
    "science": ("s01", "s09", "s10", "g11", "g19", "g20"),
    "history": ("s02", "g12"),
    "food": ("s03", "g13"),
    "sports": ("s04", "g14"),
    "arts": ("s05", "s06", "g15", "g16"),
    "travel": ("s07", "g17"),
    "computing": ("s08", "g18"),
}

# Each dialogue: key, subset, subreddit, title, users (role -> (author_id,
# author_name)), context [(role, body, score)], target (role, body, score),
# size (candidates after padding with fillers) and candidates
# [(label, document title, "section.passage.sentence", text)].
DIALOGUES = [
    # ------------------------------------------------------------------ plain
    dict(
        key="s01", subset="plain", subreddit="askscience",
        title="If blue light is scattered the most, why are sunsets red?",
        users={"A": ("t2_3kq9f", "quarkypants"), "B": ("t2_8vz1m", "photon_wrangler")},
        context=[
            ("A", "I get that sunlight is white and the air scatters it somehow, but if blue light is "
                  "scattered the most, why does the whole sky turn orange and red at sunset instead of "
                  "just a darker blue?", 41),
            ("B", "It's the same scattering both times. Air molecules scatter short wavelengths much more "
                  "strongly than long ones, so during the day blue light gets bounced around the whole "
                  "sky and reaches you from every direction.", 63),
            ("A", "Okay, but it's the same sun at 6pm. What changes about the air between noon and the "
                  "evening?", 17),
        ],
        target=("B", "Nothing changes about the air, the path does. Near the horizon the light crosses "
                     "dozens of times more atmosphere, so most of the blue is scattered out sideways "
                     "before it reaches you and what survives is the orange and red end. Dust and smoke "
                     "make it even redder.", 88),
        size=18,
        candidates=[
            (1, "Rayleigh scattering", "1.0.2", "The intensity of Rayleigh scattering is inversely "
                "proportional to the fourth power of the wavelength, so blue light is scattered far "
                "more strongly than red light."),
            (1, "Sunset", "2.0.0", "When the Sun is near the horizon, its light passes through a much "
                "greater thickness of air than at midday, and most of the shorter-wavelength light is "
                "removed from the direct beam."),
            (1, "Air mass (astronomy)", "3.1.0", "At the horizon the relative air mass is about 38, "
                "compared with 1 for a source directly overhead."),
            (1, "Sunset", "2.1.3", "Particles from volcanic eruptions, wildfires and dust storms can make "
                "the evening twilight appear more intensely orange."),
            (0, "Diffuse sky radiation", "0.0.0", "Diffuse sky radiation is solar radiation reaching the "
                "Earth's surface after having been scattered from the direct solar beam by molecules or "
                "particulates in the atmosphere."),
            (0, "Sky blue", "0.0.0", "Sky blue is a colour that resembles the colour of a cloudless "
                "daytime sky."),
            (0, "Red sky at morning", "0.0.1", "'Red sky at night, shepherd's delight' is a weather "
                "proverb that links a red evening sky with fine weather the next day."),
            (0, "Sunset Boulevard (film)", "0.0.0", "Sunset Boulevard is a 1950 American film noir "
                "directed by Billy Wilder."),
            (0, "Blue", "4.2.1", "Blue is one of the three primary colours in the traditional RYB colour "
                "model used by painters."),
            (0, "Tyndall effect", "0.0.2", "The Tyndall effect is light scattering by particles in a "
                "colloid, such as the bluish haze seen when a beam passes through smoky air."),
            (0, "Mars", "5.3.4", "On Mars the daytime sky is a butterscotch colour, while sunsets there "
                "appear blue."),
            (0, "White light", "0.0.1", "White light is a mixture of all visible wavelengths, as shown "
                "when sunlight is split by a prism."),
            (0, "Green flash", "0.0.0", "A green flash is an optical phenomenon sometimes seen just after "
                "sunset or just before sunrise, when a green spot is visible above the Sun's upper rim."),
            (0, "Visible spectrum", "0.0.3", "Visible light has wavelengths from about 380 to 750 "
                "nanometres."),
        ],
    ),
    dict(
        key="s02", subset="plain", subreddit="AskHistorians",
        title="Did Vikings actually wear horned helmets?",
        users={"A": ("t2_5rt2w", "fjord_focus"), "B": ("t2_1hx7d", "runestone_reader")},
        context=[
            ("A", "Every cartoon Viking has horns on his helmet, but a teacher once told me that's totally "
                  "made up. Is there any real evidence either way?", 112),
            ("B", "Your teacher was right. Archaeologists have found very few helmets from that period at "
                  "all, and none of them have horns. Horns would have been a liability in a fight "
                  "anyway.", 240),
            ("A", "So where did the idea come from? It's so universal that it feels like it must have "
                  "started somewhere.", 58),
        ],
        target=("B", "Mostly from 19th-century romanticism. The costume designer for Wagner's Ring cycle "
                     "in 1876 put horns on the singers and the image stuck. There were real horned "
                     "helmets in Scandinavia, but they're Bronze Age ceremonial pieces from well over a "
                     "thousand years before the Vikings.", 301),
        size=16,
        candidates=[
            (1, "Horned helmet", "2.0.1", "The costume designer Carl Emil Doepler created horned helmets "
                "for the first Bayreuth production of Wagner's Der Ring des Nibelungen in 1876."),
            (1, "Horned helmet", "1.0.0", "Horned helmets such as the pair found at Veksø in Denmark date "
                "from the Nordic Bronze Age, around 900 BC, and were probably ceremonial."),
            (1, "Gjermundbu helmet", "0.0.1", "The Gjermundbu helmet, found in Norway in 1943, is the only "
                "near-complete helmet known from the Viking Age, and it has a rounded cap with a "
                "spectacle guard."),
            (1, "Romantic nationalism", "3.2.0", "In the nineteenth century Romantic nationalism in "
                "Scandinavia revived interest in Old Norse myths and produced popular images of ancient "
                "northern warriors."),
            (1, "Viking Age", "0.0.0", "The Viking Age is generally dated from 793 to 1066 AD."),
            (0, "Vikings (TV series)", "0.0.0", "Vikings is a historical drama television series created "
                "by Michael Hirst that premiered on the History channel in 2013."),
            (0, "Minnesota Vikings", "4.1.0", "The Minnesota Vikings are a professional American football "
                "team whose helmets feature a pair of white horns."),
            (0, "Helmet", "0.0.0", "A helmet is a form of protective gear worn to protect the head."),
            (0, "Hägar the Horrible", "0.0.0", "Hägar the Horrible is a comic strip about a "
                "horn-helmeted Viking, created by Dik Browne in 1973."),
            (0, "Sutton Hoo helmet", "0.0.0", "The Sutton Hoo helmet is a decorated Anglo-Saxon helmet "
                "found during a 1939 excavation of a ship burial in Suffolk."),
            (0, "Longship", "0.0.1", "Longships were the warships used by the Vikings, with a shallow "
                "draught that allowed them to navigate rivers."),
            (0, "Richard Wagner", "0.0.0", "Richard Wagner was a German composer known chiefly for his "
                "operas, which he called music dramas."),
        ],
    ),
    dict(
        key="s03", subset="plain", subreddit="Cooking",
        title="Does resting a steak actually do anything?",
        users={"A": ("t2_9pd4e", "cast_iron_carl"), "B": ("t2_2mb8s", "saltfatacidnerd")},
        context=[
            ("A", "Every recipe says rest the steak for five to ten minutes before cutting it. Does this "
                  "actually do anything or is it just tradition? Mine gets cold.", 36),
            ("B", "It does something, but people overstate it. The idea is that if you cut it straight "
                  "off the pan, more juice ends up on the board.", 44),
            ("A", "Why would waiting change how much juice comes out though? The juice is either in there "
                  "or it isn't.", 21),
        ],
        target=("B", "When meat cooks the muscle proteins tighten and squeeze liquid toward the centre. "
                     "As it cools a little the juices thicken and get reabsorbed, so less runs out when "
                     "you cut. It also keeps cooking while it sits, so pull it a few degrees early. Tent "
                     "it with foil if it's going cold.", 52),
        size=20,
        candidates=[
            (1, "Carryover cooking", "0.0.0", "Carryover cooking is the phenomenon whereby food continues "
                "to cook after it is removed from the heat source, because its outer layers are hotter "
                "than its centre."),
            (1, "Carryover cooking", "1.0.1", "A large roast may rise several degrees in internal "
                "temperature while resting, so cooks take it out of the oven before it reaches the "
                "target temperature."),
            (1, "Meat", "4.2.3", "As muscle proteins are heated they denature and contract, squeezing "
                "water out of the fibres."),
            (1, "Meat", "4.2.4", "As meat cools after cooking its juices become more viscous and are "
                "held more readily by the fibres."),
            (1, "Steak", "3.1.0", "Resting a steak after cooking allows the juices to redistribute, which "
                "reduces the amount of liquid lost when it is sliced."),
            (1, "Aluminium foil", "2.3.1", "Loosely covering cooked meat with aluminium foil slows heat "
                "loss without trapping enough steam to soften a crust."),
            (0, "Basal metabolic rate", "0.0.0", "Resting metabolic rate is the energy an animal uses "
                "while at rest."),
            (0, "Heart rate", "2.0.0", "A normal resting heart rate for adults ranges from 60 to 100 beats "
                "per minute."),
            (0, "Steak", "1.0.4", "A T-bone steak is cut from the short loin and contains a T-shaped bone "
                "with meat on each side."),
            (0, "Doneness", "0.0.1", "Steak doneness is commonly described as rare, medium-rare, medium, "
                "medium-well and well done."),
            (0, "Maillard reaction", "0.0.0", "The Maillard reaction between amino acids and reducing "
                "sugars gives browned food its distinctive flavour."),
            (0, "Cutting board", "0.0.1", "Cutting boards are commonly made of wood or plastic."),
            (0, "Juice", "0.0.0", "Juice is a drink made from the extraction of the natural liquid "
                "contained in fruit and vegetables."),
            (0, "Sous vide", "0.0.2", "Sous vide cooking holds food in a water bath at a precise "
                "temperature, so meat is cooked evenly from edge to centre."),
            (0, "Myoglobin", "3.0.1", "The red liquid that runs from cooked beef is mostly water coloured "
                "by myoglobin, not blood."),
        ],
    ),
    dict(
        key="s04", subset="plain", subreddit="soccer",
        title="Why did UEFA get rid of the away goals rule?",
        users={"A": ("t2_4ny6c", "ultras_of_the_sofa"), "B": ("t2_7ge2k", "xg_merchant")},
        context=[
            ("A", "I've watched the Champions League for twenty years and the away goals rule was just "
                  "part of it. Why did UEFA suddenly scrap it?", 95),
            ("B", "It wasn't that sudden, managers had complained for years that it made home teams in "
                  "the first leg play too cautiously.", 130),
            ("A", "Cautiously how? If anything I'd expect the home team to go all out.", 12),
            ("B", "Conceding at home was so costly that a lot of teams just sat back in the first leg and "
                  "settled for a goalless draw.", 76),
            ("A", "But wasn't the whole point to stop teams parking the bus away from home? It seems like "
                  "it worked.", 27),
        ],
        target=("B", "That was the reasoning when it came in back in the sixties, when travel was hard "
                     "and playing at home was a huge edge. UEFA's argument in 2021 was that home "
                     "advantage has shrunk a lot since then, so the rule now favoured the visitors, "
                     "especially in extra time.", 188),
        size=25,
        candidates=[
            (1, "Away goals rule", "1.0.0", "The away goals rule was first used by UEFA in the European "
                "Cup Winners' Cup in 1965."),
            (1, "Away goals rule", "3.0.2", "In June 2021 UEFA announced that the away goals rule would be "
                "abolished in all its club competitions from the 2021–22 season."),
            (1, "Away goals rule", "3.0.3", "UEFA cited statistics showing that the advantage of playing "
                "at home had declined steadily since the 1970s."),
            (0, "Home advantage", "1.0.0", "Studies attribute home advantage to crowd support, familiarity "
                "with the venue, travel fatigue and referee bias."),
            (0, "Own goal", "0.0.0", "An own goal occurs when a player scores in their own team's net."),
            (0, "Golden goal", "2.0.1", "The golden goal rule ended a match in extra time as soon as a goal "
                "was scored; UEFA and FIFA abandoned it in 2004."),
            (0, "UEFA Champions League", "0.0.0", "The UEFA Champions League is an annual club football "
                "competition organised by UEFA and contested by top-division European clubs."),
            (0, "Penalty shoot-out", "0.0.0", "A penalty shoot-out decides a knockout tie when the teams "
                "are level after extra time."),
            (0, "Parking the bus", "0.0.0", "'Parking the bus' is a colloquial term for an ultra-defensive "
                "tactic in which most players stay behind the ball."),
            (0, "Offside (association football)", "1.0.0", "A player is in an offside position if any "
                "part of the head, body or feet is in the opponents' half and nearer to the goal line "
                "than both the ball and the second-last opponent."),
            (0, "Video assistant referee", "2.1.1", "The video assistant referee was introduced in the "
                "UEFA Champions League from the round of 16 of the 2018–19 season."),
        ],
    ),
    dict(
        key="s05", subset="plain", subreddit="beatles",
        title="How did they record Sgt. Pepper on four-track tape?",
        users={"A": ("t2_6fw3a", "mr_kite_benefit"), "B": ("t2_0tq5z", "tape_op_1967")},
        context=[
            ("A", "Sgt. Pepper sounds so dense, orchestras, overdubs, sound effects. I read Abbey Road "
                  "only had four-track machines in 1967. How is that even possible?", 77),
            ("B", "Lots of planning and a couple of very inventive engineers. They'd fill up the tracks, "
                  "then mix them together to free space.", 91),
            ("A", "Doesn't mixing them down make everything sound worse each time?", 15),
        ],
        target=("B", "A bit, yes, every copy adds hiss, which is why they planned those reductions "
                     "carefully. For A Day in the Life they also ran two four-track machines in sync to "
                     "get the orchestra on. Geoff Emerick was the engineer who pulled a lot of that "
                     "off.", 120),
        size=30,
        candidates=[
            (1, "Sgt. Pepper's Lonely Hearts Club Band", "3.1.2", "The album was recorded on four-track "
                "machines at EMI Studios, and the engineers repeatedly mixed several tracks down onto one "
                "to free space for overdubs."),
            (1, "Sgt. Pepper's Lonely Hearts Club Band", "3.4.0", "For the orchestral passages of 'A Day "
                "in the Life', a second four-track machine was synchronised with the first."),
            (1, "Geoff Emerick", "1.0.0", "Geoff Emerick was the principal recording engineer on Sgt. "
                "Pepper's Lonely Hearts Club Band and won a Grammy Award for his work on it."),
            (1, "Generation loss", "0.0.0", "Generation loss is the loss of quality between successive "
                "copies of analogue recordings, each of which adds noise such as hiss."),
            (1, "Bouncing (audio)", "0.0.1", "Bouncing, also called reduction mixing, combines several "
                "recorded parts onto a single free track of the same recorder."),
            (0, "Sgt. Pepper's Lonely Hearts Club Band (film)", "0.0.0", "Sgt. Pepper's Lonely Hearts Club "
                "Band is a 1978 musical comedy film starring Peter Frampton and the Bee Gees."),
            (0, "Abbey Road", "0.0.0", "Abbey Road is the eleventh studio album by the Beatles, released "
                "in September 1969."),
            (0, "Abbey Road Studios", "0.0.0", "Abbey Road Studios is a recording studio in St John's Wood, "
                "London, established in 1931 by the Gramophone Company."),
            (0, "Multitrack recording", "0.0.0", "Multitrack recording allows separate recording of "
                "multiple sound sources to create a cohesive whole."),
            (0, "Pet Sounds", "4.0.1", "Pet Sounds by the Beach Boys, released in 1966, was a major "
                "influence on Sgt. Pepper."),
            (0, "Portastudio", "0.0.0", "The Portastudio, introduced by TASCAM in 1979, was a "
                "cassette-based four-track recorder for home musicians."),
            (0, "Sound effect", "0.0.0", "A sound effect is an artificially created or enhanced sound used "
                "to emphasise content in films, music or other media."),
            (0, "Orchestra", "1.0.2", "A symphony orchestra typically has between 70 and 100 musicians."),
        ],
    ),
    dict(
        key="s06", subset="plain", subreddit="movies",
        title="How were the effects in 2001: A Space Odyssey done in 1968?",
        users={"A": ("t2_2zc8r", "monolith_enjoyer"), "B": ("t2_5kj0p", "matte_painter_mike"),
               "C": ("t2_8aa3t", "hal_opens_doors")},
        context=[
            ("A", "Rewatched 2001 last night and the spaceship shots still hold up better than most CGI. "
                  "There were no computers doing graphics in 1968, so how did Kubrick do it?", 210),
            ("B", "Huge detailed models, shot very slowly with tiny apertures so everything stayed in "
                  "focus. Some of the exposures took hours per frame.", 180),
            ("C", "The rotating centrifuge set was real too, they built a giant spinning wheel.", 64),
            ("A", "And the apes at the start? Those landscapes look like real Africa to me.", 45),
        ],
        target=("B", "They were shot on a stage in England: photos taken in the African desert were "
                     "thrown onto a huge reflective screen behind the actors, lit from beside the camera "
                     "so it hid the shadows. The light-tunnel trip near the end was Douglas Trumbull's "
                     "slit-scan rig.", 166),
        size=22,
        candidates=[
            (1, "2001: A Space Odyssey (film)", "4.2.0", "The 'Dawn of Man' sequence was filmed in a studio "
                "at Borehamwood using front projection of large transparencies photographed in South West "
                "Africa."),
            (1, "Front projection effect", "0.0.1", "In front projection the background image is projected "
                "through a half-silvered mirror from beside the camera onto a highly reflective screen, "
                "so that the performers hide their own shadows."),
            (1, "Slit-scan photography", "1.0.0", "Douglas Trumbull adapted slit-scan photography to "
                "create the 'Star Gate' sequence of 2001: A Space Odyssey."),
            (0, "2001: A Space Odyssey (film)", "4.1.3", "The spacecraft models were filmed with long "
                "exposures and small apertures to obtain great depth of field."),
            (0, "2001: A Space Odyssey (film)", "4.1.5", "A 30-ton rotating centrifuge set was built by "
                "Vickers-Armstrong Engineering for the scenes aboard Discovery One."),
            (0, "2010: The Year We Make Contact", "0.0.0", "2010: The Year We Make Contact is a 1984 "
                "sequel directed by Peter Hyams."),
            (0, "Planet of the Apes (1968 film)", "2.0.1", "Planet of the Apes, also released in 1968, used "
                "prosthetic make-up designed by John Chambers."),
            (0, "Stanley Kubrick", "0.0.0", "Stanley Kubrick was an American filmmaker whose films include "
                "Dr. Strangelove and The Shining."),
            (0, "Computer-generated imagery", "0.0.0", "Computer-generated imagery is the use of computer "
                "graphics to create or contribute images in art and films."),
            (0, "Space Odyssey: Voyage to the Planets", "0.0.0", "Space Odyssey: Voyage to the Planets is "
                "a 2004 British docudrama about a crewed tour of the Solar System."),
            (0, "HAL 9000", "0.0.0", "HAL 9000 is a fictional artificial intelligence character in Arthur "
                "C. Clarke's Space Odyssey series."),
        ],
    ),
    dict(
        key="s07", subset="plain", subreddit="travel",
        title="Iceland in December: worth it or miserable?",
        users={"A": ("t2_1wd6n", "backpack_and_brie"), "B": ("t2_7op3x", "reykjavik_rover")},
        context=[
            ("A", "Thinking of Iceland in December because flights are cheap. Is it miserable in winter "
                  "or actually worth it? Mainly want to see the northern lights and drive around.", 33),
            ("B", "Worth it if you plan around the weather. Prices are lower and the landscapes with snow "
                  "are incredible.", 29),
            ("A", "How much daylight do you actually get? And is driving the whole ring road "
                  "realistic?", 12),
        ],
        target=("B", "About four hours of daylight in the capital near the solstice, so plan drives for "
                     "midday. Aurora season runs roughly September to April, so December is fine if it's "
                     "clear. I'd skip the full loop; storms close sections of it, and the highland roads "
                     "are shut all winter.", 47),
        size=28,
        candidates=[
            (1, "Reykjavík", "3.0.2", "Around the winter solstice, Reykjavík has only about four hours of "
                "daylight."),
            (1, "Reykjavík", "3.0.3", "In late December the sun rises after 11 in the morning and sets "
                "at about half past three in the afternoon."),
            (1, "Aurora", "2.1.0", "At high latitudes auroras are most often visible from September to "
                "April, when nights are long and dark."),
            (1, "Route 1 (Iceland)", "0.0.1", "Route 1 runs about 1,322 kilometres around the island, and "
                "sections of it can be closed during storms."),
            (1, "Roads in Iceland", "2.0.0", "The F-roads into the interior highlands are usually open "
                "only from late June to September."),
            (1, "Aurora", "2.1.3", "Auroras can only be seen when the sky is dark and free of cloud."),
            (0, "Iceland (supermarket)", "0.0.0", "Iceland is a British supermarket chain specialising in "
                "frozen food."),
            (0, "Winter", "0.0.0", "Winter is the coldest season of the year in polar and temperate "
                "climates."),
            (0, "Northern Lights (novel)", "0.0.0", "Northern Lights is a 1995 fantasy novel by Philip "
                "Pullman, the first book of His Dark Materials."),
            (0, "Icelandic króna", "0.0.0", "The Icelandic króna is the currency of Iceland."),
            (0, "Blue Lagoon (geothermal spa)", "0.0.0", "The Blue Lagoon is a geothermal spa in "
                "southwestern Iceland."),
            (0, "Keflavík International Airport", "0.0.0", "Keflavík International Airport is the largest "
                "airport in Iceland and the main hub for international flights."),
            (0, "Reykjavík", "4.0.1", "Thanks to the North Atlantic Current, Reykjavík's winters are milder "
                "than its latitude suggests, with average January temperatures near freezing."),
        ],
    ),
    dict(
        key="s08", subset="plain", subreddit="learnpython",
        title="Why does 0.1 + 0.2 give 0.30000000000000004?",
        users={"A": ("t2_3bb7y", "print_hello_world"), "B": ("t2_9lk2q", "segfault_sommelier"),
               "C": ("t2_1rr4u", "rubber_duck_dev")},
        context=[
            ("A", "Just started learning Python and 0.1 + 0.2 gives me 0.30000000000000004. Is my install "
                  "broken? This seems like a really basic thing to get wrong.", 64),
            ("B", "Not broken, every language does this. JavaScript, C, Java, all of them give the same "
                  "answer.", 88),
            ("C", "Try 0.1 + 0.2 == 0.3 in the console, it returns False. Fun times.", 41),
            ("A", "That's even worse. But why? It's simple decimal arithmetic, a calculator gets it "
                  "right.", 19),
            ("B", "Because under the hood it isn't decimal arithmetic at all, that's the whole trick.", 35),
            ("A", "Then what is it? And how do I get the answer I expect?", 8),
        ],
        target=("B", "Computers store these numbers in base two, and one tenth has no exact binary form, "
                     "just like 1/3 has none in decimal, so you get the nearest double and tiny errors "
                     "add up. Calculators usually work in decimal internally. If you need exact results "
                     "use the decimal module.", 143),
        size=35,
        candidates=[
            (1, "Floating-point arithmetic", "2.3.0", "Decimal fractions such as 0.1 cannot be represented "
                "exactly as binary fractions, so they are stored as the nearest representable value."),
            (1, "IEEE 754", "1.1.1", "The IEEE 754 double-precision format, used by most programming "
                "languages, has a 53-bit significand, giving 15 to 17 significant decimal digits."),
            (1, "Binary number", "5.0.2", "Just as one third has no finite expansion in base ten, one tenth "
                "has no finite expansion in base two."),
            (1, "Binary-coded decimal", "3.0.0", "Many pocket calculators store numbers in binary-coded "
                "decimal form internally."),
            (1, "Python (programming language)", "6.2.1", "Python's standard library includes a decimal "
                "module for exact decimal arithmetic."),
            (0, "Python (programming language)", "1.0.0", "Python was conceived in the late 1980s by Guido "
                "van Rossum at Centrum Wiskunde & Informatica in the Netherlands."),
            (0, "Monty Python", "0.0.0", "Monty Python were a British comedy troupe formed in 1969."),
            (0, "JavaScript", "0.0.1", "JavaScript is one of the core technologies of the World Wide Web, "
                "alongside HTML and CSS."),
            (0, "Calculator", "1.2.0", "The first handheld electronic calculators appeared in the early "
                "1970s."),
            (0, "Integer overflow", "0.0.0", "Integer overflow occurs when an arithmetic operation produces "
                "a value outside the range that can be represented with a given number of digits."),
            (0, "Pentium FDIV bug", "0.0.0", "The Pentium FDIV bug was a flaw in the floating-point unit of "
                "early Intel Pentium processors that made some divisions return incorrect results."),
            (0, "Arithmetic", "0.0.0", "Arithmetic is the branch of mathematics that studies numbers and "
                "the operations of addition, subtraction, multiplication and division."),
        ],
    ),
    dict(
        key="s09", subset="plain", subreddit="space",
        title="How do astronauts on the ISS keep their bones from wasting away?",
        users={"A": ("t2_6hs1v", "kerbal_dropout"), "B": ("t2_2pe9w", "delta_v_debbie")},
        context=[
            ("A", "Astronauts on the ISS float around for six months at a time. Without gravity loading "
                  "their skeleton, don't their bones just waste away?", 156),
            ("B", "They do lose bone, it's one of the biggest medical problems of long missions. NASA "
                  "takes it very seriously.", 98),
            ("A", "So what do they actually do about it? Is there a drug or something?", 22),
        ],
        target=("B", "Mostly exercise, about two hours a day. The station has a resistive machine that "
                     "uses vacuum cylinders to simulate lifting weights, plus a treadmill they strap "
                     "into with bungees. Without it they'd lose 1 to 1.5 percent of hip density a month. "
                     "Some crews also tested the pills used for osteoporosis.", 174),
        size=40,
        candidates=[
            (1, "Spaceflight osteopenia", "0.0.1", "Astronauts lose on average about 1 to 1.5 percent of "
                "bone mineral density per month in spaceflight, mostly in the hips and legs."),
            (1, "Advanced Resistive Exercise Device", "0.0.0", "The Advanced Resistive Exercise Device uses "
                "vacuum cylinders to simulate free-weight exercises such as squats and deadlifts in "
                "microgravity."),
            (1, "International Space Station", "9.1.2", "Crew members exercise about two hours a day to "
                "counter the loss of muscle and bone in weightlessness."),
            (1, "Treadmill", "5.0.3", "On the space station a runner is held against the belt by a harness "
                "attached to bungee cords."),
            (1, "Bisphosphonate", "0.0.0", "Bisphosphonates are drugs that slow bone loss and are used to "
                "treat osteoporosis."),
            (0, "Bone marrow", "0.0.0", "Bone marrow is the semi-solid tissue in the interior of bones "
                "where blood cells are produced."),
            (0, "International Space Station", "3.0.0", "The International Space Station orbits the Earth "
                "at an altitude of about 400 kilometres."),
            (0, "Osteoporosis", "4.0.2", "Osteoporosis is most common in women after the menopause, when "
                "oestrogen levels fall."),
            (0, "Gravity of the Moon", "0.0.0", "Gravity on the surface of the Moon is about one sixth of "
                "that on Earth."),
            (0, "Space adaptation syndrome", "0.0.0", "Space adaptation syndrome, a form of motion "
                "sickness, affects around half of astronauts during their first days in orbit."),
            (0, "Scott Kelly (astronaut)", "2.0.0", "Scott Kelly spent 340 days aboard the ISS in 2015 and "
                "2016 as part of the Year in Space mission."),
        ],
    ),
    dict(
        key="s10", subset="plain", subreddit="AskDocs",
        title="Will cracking my knuckles give me arthritis?",
        users={"A": ("t2_4ju8b", "pop_pop_pop_pop"), "B": ("t2_0cv6h", "ortho_throwaway")},
        context=[
            ("A", "My mom has told me my whole life that cracking my knuckles will give me arthritis. I do "
                  "it constantly. Should I actually be worried?", 25),
            ("B", "Almost certainly not, the studies that have looked at it haven't found a link.", 31),
            ("A", "What's actually making the popping noise then? I always assumed it was bones "
                  "grinding.", 9),
        ],
        target=("B", "It's gas. The joint is filled with a lubricating fluid, and when you pull it apart "
                     "the pressure drops and a bubble forms; MRI videos show the cavity appearing right at "
                     "the crack. One doctor cracked only one hand for sixty years and found no difference "
                     "between them.", 40),
        size=12,
        candidates=[
            (1, "Cracking joints", "1.0.0", "Imaging studies show that the cracking sound coincides with "
                "the rapid formation of a gas-filled cavity in the synovial fluid."),
            (0, "Rheumatoid arthritis", "0.0.0", "Rheumatoid arthritis is a long-term autoimmune disorder "
                "that primarily affects joints."),
            (0, "Knuckle", "0.0.0", "Knuckles are the joints of the fingers, formed where the metacarpal "
                "bones meet the phalanges."),
            (0, "Bone", "0.0.0", "A bone is a rigid organ that constitutes part of the skeleton."),
            (0, "Crepitus", "0.0.0", "Crepitus is a grating sound or sensation produced by friction "
                "between bone and cartilage, as can happen in arthritic joints."),
            (0, "Knuckleball", "0.0.0", "A knuckleball is a baseball pitch thrown to minimise the spin of "
                "the ball."),
            (0, "Osteoarthritis", "1.0.3", "Osteoarthritis is the most common form of arthritis, and its "
                "risk rises with age, obesity and joint injury."),
        ],
    ),
    # --------------------------------------------------------------- grounded
    dict(
        key="g11", subset="grounded", subreddit="biology",
        title="Do octopuses really have three hearts and blue blood?",
        users={"A": ("t2_8rm4d", "tidepool_tess"), "B": ("t2_3xq0j", "cephalopod_stan"),
               "C": ("t2_6nn2u", "curious_crustacean")},
        context=[
            ("A", "Saw a documentary claiming octopuses have three hearts and blue blood. That sounds like "
                  "something a kid made up. Is it true?", 187),
            ("B", "It's true, and it's not even the strangest thing about them. Most of their neurons are "
                  "in their arms.", 243),
            ("A", "Why would an animal need three hearts though? We get by with one.", 61),
            ("C", "Also the blue blood thing, what makes it blue? Ours is red because of iron, right?", 40),
        ],
        target=("B", "Two of the hearts only push blood through the gills and the third sends it round the "
                     "body. Their blood carries oxygen with a copper-based protein instead of our "
                     "iron-based one, which is why it's blue, and it isn't as good at the job, so the extra "
                     "pumping helps. https://en.wikipedia.org/wiki/Octopus#Circulatory_system", 402),
        size=15,
        candidates=[
            (1, "Octopus", "3.2.0", "An octopus has three hearts: a systemic heart that circulates blood "
                "round the body and two branchial hearts that pump it through each of the two gills."),
            (1, "Octopus", "3.2.1", "The blood contains the copper-rich protein haemocyanin to transport "
                "oxygen, which makes it blue."),
            (1, "Hemocyanin", "2.0.0", "Hemocyanin binds oxygen with copper rather than iron and carries "
                "less oxygen per volume of blood than hemoglobin."),
            (1, "Hemoglobin", "0.0.0", "Hemoglobin is the iron-containing oxygen-transport protein in the "
                "red blood cells of vertebrates."),
            (0, "Octopus", "3.2.4", "The systemic heart stops beating when the octopus swims, which is one "
                "reason octopuses tire quickly and prefer to crawl."),
            (0, "Blue blood", "0.0.0", "'Blue blood' is an English idiom for noble birth, translated from "
                "the Spanish sangre azul."),
            (0, "Octopussy", "0.0.0", "Octopussy is a 1983 spy film, the thirteenth in the James Bond "
                "series."),
            (0, "Heart", "1.1.0", "The human heart has four chambers: two atria and two ventricles."),
            (0, "Octopus", "4.0.1", "The octopus has around 500 million neurons, two thirds of them in its "
                "arms."),
            (0, "Horseshoe crab", "5.1.0", "The blue blood of horseshoe crabs is harvested to test medical "
                "products for bacterial contamination."),
            (0, "Paul the Octopus", "0.0.0", "Paul the Octopus was a common octopus at an aquarium in "
                "Oberhausen who was used to predict the results of football matches."),
        ],
    ),
    dict(
        key="g12", subset="grounded", subreddit="history",
        title="Is the Great Wall of China visible from space?",
        users={"A": ("t2_9we5k", "dynasty_warrior_dad"), "B": ("t2_1fj8c", "terracotta_tim"),
               "C": ("t2_5ab7n", "nightside_photos")},
        context=[
            ("A", "My textbook said the Great Wall of China is the only man-made structure visible from "
                  "space. My cousin says that's a myth. Who's right?", 54),
            ("B", "Your cousin, mostly. It depends a lot on what you mean by space, but from the Moon it's "
                  "definitely not.", 82),
            ("A", "Ok but from the space station? That's pretty close.", 20),
            ("C", "Cities at night are way easier to spot from up there than any wall.", 33),
        ],
        target=("B", "Even from low orbit it's barely visible, because it's narrow and about the same "
                     "colour as the ground around it. Yang Liwei, China's first astronaut, said he couldn't "
                     "see it at all. https://en.wikipedia.org/wiki/Great_Wall_of_China#Visibility_from_space",
                110),
        size=20,
        candidates=[
            (1, "Great Wall of China", "6.0.1", "The wall is rarely more than 9 metres wide and is about "
                "the same colour as the soil surrounding it, so it is very hard to see from orbit."),
            (1, "Great Wall of China", "6.0.3", "Chinese astronaut Yang Liwei said after his 2003 flight "
                "that he had not been able to see the Great Wall."),
            (1, "Visual acuity", "2.1.0", "An eye that resolves one arcminute can make out an object 6 "
                "metres wide only from about 20 kilometres away."),
            (0, "Great Wall Motors", "0.0.0", "Great Wall Motors is a Chinese automobile manufacturer "
                "headquartered in Baoding."),
            (0, "Hadrian's Wall", "0.0.0", "Hadrian's Wall was a defensive fortification in the Roman "
                "province of Britannia, begun in AD 122."),
            (0, "Great Wall of China", "2.3.0", "Most of the existing wall was rebuilt during the Ming "
                "dynasty (1368–1644)."),
            (0, "The Great Wall (film)", "0.0.0", "The Great Wall is a 2016 monster film directed by Zhang "
                "Yimou and starring Matt Damon."),
            (0, "Earth at night", "1.0.0", "City lights are among the most easily recognised human "
                "features in photographs of Earth taken at night from orbit."),
            (0, "Palm Islands", "0.0.0", "The Palm Islands are artificial archipelagos built off the coast "
                "of Dubai."),
        ],
    ),
    dict(
        key="g13", subset="grounded", subreddit="Breadit",
        title="What actually makes sourdough sour?",
        users={"A": ("t2_2vd9h", "levain_learner"), "B": ("t2_7cs4e", "crumb_shot_carol")},
        context=[
            ("A", "Started my first sourdough starter this week. What actually makes the bread sour? Is it "
                  "the yeast?", 48),
            ("B", "Not really the yeast, it's the bacteria that live in the starter alongside it.", 71),
            ("A", "Wait, bacteria? In my bread?", 26),
            ("B", "Yep, a starter is basically a stable colony of wild yeast plus bacteria, and both feed on "
                  "the flour you add.", 64),
            ("A", "Is that safe to eat? And can I make it more or less sour?", 22),
        ],
        target=("B", "Totally safe, they're the same family of microbes as in yogurt, and they produce "
                     "lactic and acetic acid which give the tang; the oven kills them anyway. A longer, "
                     "cooler proof gives more acetic acid and a sharper loaf. One of the species is named "
                     "after San Francisco: https://en.wikipedia.org/wiki/Sourdough", 95),
        size=45,
        candidates=[
            (1, "Sourdough", "0.0.1", "Sourdough is leavened by a culture of wild yeasts and lactic acid "
                "bacteria, which produce lactic and acetic acids that give the bread its sour taste."),
            (1, "Sourdough", "3.1.2", "Lower temperatures and stiffer doughs favour the production of "
                "acetic acid, giving a more sour flavour."),
            (1, "Sourdough", "3.1.3", "A longer fermentation gives the bacteria more time to make acid, "
                "so long or cold proofs give a tangier loaf."),
            (1, "Fructilactobacillus sanfranciscensis", "0.0.0", "Fructilactobacillus sanfranciscensis, "
                "formerly Lactobacillus sanfranciscensis, is named after San Francisco, where it was first "
                "identified."),
            (1, "Lactic acid bacteria", "4.0.0", "Lactic acid bacteria are used in the production of "
                "yogurt, cheese, sauerkraut and pickles."),
            (1, "Bread", "5.2.1", "The inside of a loaf reaches about 95 °C during baking, hot enough to "
                "kill the microbes in the dough."),
            (0, "Baker's yeast", "0.0.0", "Baker's yeast is the common name for strains of Saccharomyces "
                "cerevisiae used as a leavening agent."),
            (0, "San Francisco", "0.0.2", "San Francisco is the fourth most populous city in "
                "California."),
            (0, "Sour (album)", "0.0.0", "Sour is the debut studio album by Olivia Rodrigo, released in "
                "2021."),
            (0, "Sourdough (novel)", "0.0.0", "Sourdough is a 2017 novel by Robin Sloan about a software "
                "engineer who is given a sourdough starter and takes up baking."),
            (0, "Bread", "0.0.0", "Bread is a staple food prepared from a dough of flour and water, usually "
                "by baking."),
            (0, "Gluten", "2.0.0", "Gluten gives elasticity to dough, helping it rise and keep its "
                "shape."),
            (0, "Amish friendship bread", "0.0.0", "Amish friendship bread is made from a sourdough-like "
                "starter that is shared among friends."),
        ],
    ),
    dict(
        key="g14", subset="grounded", subreddit="nba",
        title="Who invented basketball, and was there always a net?",
        users={"A": ("t2_0ql3m", "fadeaway_frank"), "B": ("t2_4gz6y", "peach_basket_pete")},
        context=[
            ("A", "Watching the playoffs and wondered who actually invented basketball. Was it always "
                  "played with a hoop and a net?", 210),
            ("B", "It was invented by a gym teacher, pretty late too, 1890s.", 150),
            ("A", "Why would a gym teacher invent a whole new sport? And what did they use before "
                  "nets?", 66),
        ],
        target=("B", "James Naismith at the YMCA training school in Springfield, Massachusetts, in 1891. "
                     "He needed something to keep a class busy indoors through the New England winter. "
                     "The first goals were peach baskets, so someone had to climb up and fetch the ball "
                     "after every score. https://en.wikipedia.org/wiki/Basketball#History", 388),
        size=18,
        candidates=[
            (1, "Basketball", "1.0.0", "In December 1891 James Naismith, a physical education instructor "
                "in Springfield, Massachusetts, was trying to keep his gym class active on a rainy day."),
            (1, "Basketball", "1.0.1", "He sought a vigorous indoor game to keep his students occupied and "
                "fit during the long New England winters."),
            (1, "Basketball", "1.0.3", "The first goals were peach baskets, and the ball had to be "
                "retrieved by hand after each score."),
            (1, "Basketball", "1.1.0", "Metal hoops with nets and backboards replaced the baskets in the "
                "early twentieth century."),
            (1, "Springfield College", "0.0.0", "Springfield College, then the YMCA International Training "
                "School, is known as the birthplace of basketball."),
            (0, "NBA playoffs", "0.0.0", "The NBA playoffs are an annual elimination tournament held to "
                "determine the league champion."),
            (0, "Netball", "1.0.0", "Netball is a ball sport played by two teams of seven players, "
                "developed from early versions of basketball in England in the 1890s."),
            (0, "Hula hoop", "0.0.0", "A hula hoop is a toy hoop that is twirled around the waist, limbs "
                "or neck."),
            (0, "Peach", "0.0.0", "The peach is a deciduous tree first domesticated in Northwest China."),
            (0, "Volleyball", "1.0.0", "Volleyball was invented in 1895 by William G. Morgan, a YMCA "
                "physical education director in Holyoke, Massachusetts."),
            (0, "Naismith Memorial Basketball Hall of Fame", "0.0.0", "The Naismith Memorial Basketball "
                "Hall of Fame is located in Springfield, Massachusetts."),
        ],
    ),
    dict(
        key="g15", subset="grounded", subreddit="classicalmusic",
        title="Was Beethoven really deaf when he wrote the Ninth?",
        users={"A": ("t2_5mp1z", "allegro_ma_non_troppo"), "B": ("t2_2yh4f", "viennese_tuning")},
        context=[
            ("A", "How could Beethoven write the Ninth Symphony if he was deaf? Was he really completely "
                  "deaf or is that exaggerated?", 132),
            ("B", "He was profoundly deaf by then, he'd been losing his hearing since his late "
                  "twenties.", 97),
            ("A", "So how did he even know what it sounded like? And did he ever hear it performed?", 45),
        ],
        target=("B", "He heard it in his head; after decades of composing he could hear music just from "
                     "the score. At the premiere in 1824 he stood on stage beside the conductor, and at the "
                     "end one of the singers had to turn him round so he could see the audience "
                     "applauding. https://en.wikipedia.org/wiki/Symphony_No._9_(Beethoven)#Premiere", 219),
        size=10,
        candidates=[
            (1, "Symphony No. 9 (Beethoven)", "2.0.0", "The symphony was first performed in Vienna on 7 May "
                "1824."),
            (1, "Symphony No. 9 (Beethoven)", "2.0.3", "Although Beethoven shared the stage with the "
                "conductor Michael Umlauf, the musicians had been told to ignore his beating of time."),
            (1, "Symphony No. 9 (Beethoven)", "2.0.4", "At the end, the contralto Caroline Unger turned him "
                "round to face the audience, who were cheering and applauding."),
            (1, "Audiation", "0.0.0", "Audiation is the ability to hear and comprehend music in the mind "
                "when no sound is present."),
            (0, "Ludwig van Beethoven", "3.1.0", "Beethoven began to lose his hearing in his late twenties, "
                "and by 1818 he was almost completely deaf."),
            (0, "Beethoven (film)", "0.0.0", "Beethoven is a 1992 family comedy film about a St. Bernard "
                "dog."),
            (0, "Symphony No. 5 (Beethoven)", "0.0.1", "Beethoven's Symphony No. 5 in C minor opens with "
                "one of the best-known motifs in Western music."),
            (0, "Hearing loss", "2.0.0", "Hearing loss may be caused by genetics, ageing, exposure to noise, "
                "infections and certain medications."),
            (0, "Anthem of Europe", "0.0.0", "An arrangement of the 'Ode to Joy' theme from the final "
                "movement was adopted as the Anthem of Europe by the Council of Europe in 1972."),
            (0, "Bedřich Smetana", "4.0.0", "Bedřich Smetana composed his cycle Má vlast after he had become "
                "completely deaf."),
        ],
    ),
    dict(
        key="g16", subset="grounded", subreddit="movies",
        title="Why does the same scream show up in so many movies?",
        users={"A": ("t2_7ts2b", "popcorn_forensics"), "B": ("t2_3ue8l", "boom_mic_in_frame")},
        context=[
            ("A", "I swear I heard the exact same scream in Star Wars, an Indiana Jones movie and some "
                  "cartoon last night. Is this a real thing?", 520),
            ("B", "Yep, it's a stock sound effect that sound editors slip into films as an in-joke.", 610),
            ("A", "Where did it come from originally? Who was screaming?", 130),
        ],
        target=("B", "It was recorded for a 1951 western, Distant Drums, for a man being dragged off by an "
                     "alligator. It's named after Private Wilhelm in The Charge at Feather River, and Ben "
                     "Burtt dug it out of the studio library and put it in Star Wars. It's probably Sheb "
                     "Wooley's voice. https://en.wikipedia.org/wiki/Wilhelm_scream", 845),
        size=25,
        candidates=[
            (1, "Wilhelm scream", "1.0.0", "The scream was first recorded for the 1951 film Distant Drums, "
                "in a scene in which a soldier is bitten and dragged underwater by an alligator."),
            (1, "Wilhelm scream", "1.0.2", "It is named after Private Wilhelm, a character in the 1953 "
                "western The Charge at Feather River, who is hit in the thigh by an arrow."),
            (1, "Wilhelm scream", "2.0.0", "Sound designer Ben Burtt found the recording in a Warner Bros. "
                "archive and used it in Star Wars, making it his signature."),
            (1, "Sheb Wooley", "3.0.1", "Sheb Wooley, an actor and singer best known for 'The Purple People "
                "Eater', is believed to have voiced the scream."),
            (0, "Scream (1996 film)", "0.0.0", "Scream is a 1996 slasher film directed by Wes Craven."),
            (0, "The Scream", "0.0.0", "The Scream is a composition by Edvard Munch, created in 1893."),
            (0, "Star Wars (film)", "0.0.0", "Star Wars is a 1977 space opera film written and directed by "
                "George Lucas."),
            (0, "Raiders of the Lost Ark", "0.0.0", "Raiders of the Lost Ark, the first Indiana Jones film, "
                "was released in 1981."),
            (0, "Howie scream", "0.0.0", "The Howie scream is another stock sound effect that has been "
                "reused in many films and television series."),
            (0, "Foley (filmmaking)", "0.0.0", "Foley is the reproduction of everyday sound effects added "
                "to films in post-production."),
            (0, "Castle thunder", "0.0.0", "Castle thunder is a stock thunderclap sound effect first "
                "recorded for the 1931 film Frankenstein."),
        ],
    ),
    dict(
        key="g17", subset="grounded", subreddit="travel",
        title="Is Venice still flooding every winter?",
        users={"A": ("t2_1kx5r", "gondola_goals"), "B": ("t2_8dd0v", "laguna_local")},
        context=[
            ("A", "Planning a trip to Venice in November and everyone warns me about acqua alta. Is the "
                  "whole city really underwater every winter?", 39),
            ("B", "Not the whole city and not every day, it's high tides that flood the lowest parts like "
                  "St Mark's Square.", 52),
            ("A", "I thought they built some huge barrier to stop it? Is that not working?", 18),
        ],
        target=("B", "They did, it's called MOSE: rows of gates at the three openings of the lagoon that "
                     "rise when a high tide is forecast. It was first used for real in October 2020 and "
                     "has kept out most big tides since, but the piazza still gets wet on moderate ones "
                     "because it's so low. https://en.wikipedia.org/wiki/MOSE", 77),
        size=30,
        candidates=[
            (1, "MOSE", "0.0.0", "MOSE is a project intended to protect Venice and the Venetian Lagoon "
                "from flooding, consisting of rows of mobile gates installed at the Lido, Malamocco and "
                "Chioggia inlets."),
            (1, "MOSE", "2.0.1", "The gates lie on the seabed and are raised by pumping in compressed air "
                "when a tide above 110 centimetres is forecast."),
            (0, "Acqua alta", "0.0.0", "Acqua alta is the term for exceptional tide peaks in the northern "
                "Adriatic Sea, which periodically flood Venice."),
            (0, "Venice, Los Angeles", "0.0.1", "Venice Beach is a neighbourhood of Los Angeles known for "
                "its boardwalk."),
            (0, "Thames Barrier", "0.0.0", "The Thames Barrier is a movable flood barrier that has "
                "protected London from tidal surges since 1982."),
            (0, "Venice Biennale", "0.0.0", "The Venice Biennale is an international art exhibition held in "
                "Venice every two years."),
            (0, "Flood", "0.0.0", "A flood is an overflow of water that submerges land that is usually "
                "dry."),
            (0, "Acqua alta", "2.0.3", "In November 2019 the tide in Venice reached 187 centimetres, the "
                "highest since 1966."),
        ],
    ),
    dict(
        key="g18", subset="grounded", subreddit="programming",
        title="Did a moth really give us the word 'bug'?",
        users={"A": ("t2_6qa9t", "off_by_one_olga"), "B": ("t2_0xe3n", "legacy_cobol_ken")},
        context=[
            ("A", "Is it true the word bug comes from an actual moth getting stuck in a computer? I've "
                  "heard that story told at least three times at work.", 340),
            ("B", "Partly true, there's a famous logbook with a moth taped in it.", 415),
            ("A", "Partly? So the moth story isn't the origin?", 120),
        ],
        target=("B", "The moth was real: in 1947 the Harvard Mark II operators found one in a relay and "
                     "taped it in the log as the 'first actual case of bug being found', which is the joke, "
                     "since engineers already called faults bugs. Edison was writing about bugs in his "
                     "inventions in the 1870s. https://en.wikipedia.org/wiki/Bug_(engineering)#History",
                690),
        size=14,
        candidates=[
            (1, "Software bug", "2.0.1", "In 1947 operators of the Harvard Mark II computer found a moth "
                "trapped in a relay and taped it into the logbook with the note 'First actual case of bug "
                "being found'."),
            (1, "Bug (engineering)", "1.0.0", "Thomas Edison used the word 'bug' for faults and difficulties "
                "in a letter written in 1878."),
            (0, "Harvard Mark II", "0.0.0", "The Harvard Mark II was an electromechanical computer built "
                "under the direction of Howard Aiken."),
            (0, "Moth", "0.0.0", "Moths are a group of insects that includes all members of the order "
                "Lepidoptera that are not butterflies."),
            (0, "Bug (2006 film)", "0.0.0", "Bug is a 2006 psychological horror film directed by William "
                "Friedkin."),
            (0, "Hemiptera", "0.0.0", "True bugs belong to the order Hemiptera, which includes cicadas, "
                "aphids and shield bugs."),
            (0, "Debugging", "0.0.0", "Debugging is the process of finding and resolving defects in "
                "software."),
            (0, "Year 2000 problem", "0.0.0", "The year 2000 problem arose because many programs stored "
                "years with only two digits."),
        ],
    ),
    dict(
        key="g19", subset="grounded", subreddit="space",
        title="What is still powering Voyager 1?",
        users={"A": ("t2_3vc7k", "pale_blue_dotty"), "B": ("t2_9ob1s", "deep_space_network"),
               "C": ("t2_5gm8w", "goldstone_groupie")},
        context=[
            ("A", "Voyager 1 is past the edge of the solar system and still sending data after 45 years. "
                  "Solar panels can't work that far from the Sun, so what's powering it?", 1204),
            ("B", "Nuclear batteries, basically. No solar panels at all.", 870),
            ("C", "And the signal is ridiculously faint by the time it gets here, it takes the biggest "
                  "dishes on Earth to hear it.", 402),
            ("A", "Nuclear as in a reactor? How does that last 45 years?", 233),
        ],
        target=("B", "Not a reactor, it's RTGs: lumps of plutonium-238 that stay hot from radioactive "
                     "decay, with thermocouples turning the heat into electricity. The half-life is about "
                     "88 years, but output drops a few watts a year, so NASA keeps switching instruments "
                     "off. https://en.wikipedia.org/wiki/Voyager_1#Power", 1650),
        size=50,
        candidates=[
            (1, "Voyager 1", "4.1.0", "Voyager 1 carries three radioisotope thermoelectric generators "
                "mounted on a boom."),
            (1, "Radioisotope thermoelectric generator", "0.0.0", "A radioisotope thermoelectric generator "
                "uses an array of thermocouples to convert the heat released by the decay of a radioactive "
                "material into electricity."),
            (1, "Plutonium-238", "0.0.2", "Plutonium-238 has a half-life of 87.7 years."),
            (1, "Voyager 1", "4.1.2", "The power output declines by about 4 watts per year, and mission "
                "controllers have switched off instruments to conserve power."),
            (0, "Solar panels on spacecraft", "2.0.0", "At the distance of Jupiter, sunlight is only about "
                "4 percent as intense as at Earth."),
            (0, "Nuclear reactor", "0.0.0", "A nuclear reactor initiates and controls a fission nuclear "
                "chain reaction."),
            (0, "Voyager Golden Record", "0.0.0", "The Voyager Golden Records are phonograph records "
                "carrying sounds and images of life on Earth."),
            (0, "Star Trek: Voyager", "0.0.0", "Star Trek: Voyager is an American science fiction television "
                "series that aired from 1995 to 2001."),
            (0, "Heliopause", "1.0.0", "Voyager 1 crossed the heliopause into interstellar space on 25 "
                "August 2012."),
            (0, "Lithium-ion battery", "0.0.0", "A lithium-ion battery is a rechargeable battery commonly "
                "used in portable electronics."),
            (0, "Solar panel", "0.0.0", "Solar panels convert sunlight directly into electricity using "
                "photovoltaic cells."),
        ],
    ),
    dict(
        key="g20", subset="grounded", subreddit="AskDocs",
        title="Why do I need a new flu shot every single year?",
        users={"A": ("t2_4rr0g", "needle_nervous_nora"), "B": ("t2_7yb2c", "er_nurse_on_break")},
        context=[
            ("A", "Why do I need a new flu shot every year when a measles vaccine lasts my whole life? "
                  "Feels like a scam to keep selling them.", 14),
            ("B", "It's not a scam, the flu virus itself changes every year.", 37),
            ("A", "Changes how? And how do they know which version to put in the shot?", 11),
        ],
        target=("B", "Influenza mutates constantly, small changes to its surface proteins, so antibodies "
                     "from last year's shot don't recognise this year's virus as well. The WHO picks the "
                     "strains twice a year, once for each hemisphere, based on what's circulating. "
                     "Protection also fades within months. https://en.wikipedia.org/wiki/Influenza_vaccine",
                58),
        size=35,
        candidates=[
            (1, "Antigenic drift", "0.0.0", "Antigenic drift is a kind of genetic variation in viruses, "
                "arising from the accumulation of mutations in the genes that code for surface proteins "
                "that host antibodies recognise."),
            (1, "Influenza vaccine", "3.0.1", "The World Health Organization recommends the strains to be "
                "included twice a year, once for the Northern Hemisphere and once for the Southern "
                "Hemisphere."),
            (1, "Influenza vaccine", "5.2.0", "Protection from the vaccine wanes over the course of a "
                "season."),
            (1, "Hemagglutinin (influenza)", "0.0.1", "Hemagglutinin is a glycoprotein on the surface of "
                "influenza viruses, and antibodies against it block infection."),
            (0, "Measles vaccine", "0.0.2", "Two doses of measles vaccine give lifelong immunity in most "
                "people."),
            (0, "Antigenic shift", "0.0.0", "Antigenic shift is the process by which two or more different "
                "strains of a virus combine to form a new subtype, which can cause pandemics."),
            (0, "Spanish flu", "0.0.0", "The 1918 influenza pandemic infected about a third of the world's "
                "population."),
            (0, "Gastroenteritis", "0.0.3", "Gastroenteritis, often called stomach flu, is unrelated to "
                "influenza."),
            (0, "Edward Jenner", "0.0.0", "Edward Jenner's 1796 smallpox experiment is considered the "
                "first vaccination."),
            (0, "Common cold", "0.0.0", "The common cold is a viral infection of the upper respiratory "
                "tract, most often caused by rhinoviruses."),
        ],
    ),
]


def doc_id(title: str) -> int:
    """A made-up, stable Wikipedia-style page id for a document title."""
    return int(hashlib.sha1(title.encode("utf-8")).hexdigest()[:8], 16) % 9_000_000 + 100_000


def sentence_id(title: str, position: str) -> str:
    """``<Doc_title>_<docid>_<section>_<passage>_<sentence>``, the SIGIR 2022 id shape."""
    section, passage, sentence = position.split(".")
    return f"{title.replace(' ', '_')}_{doc_id(title)}_{section}_{passage}_{sentence}"


def _group(key: str) -> str:
    return next(name for name, keys in GROUPS.items() if key in keys)


def build_records() -> list[dict]:
    """The benchmark-file records, in order; raises ValueError on inconsistent content."""
    from rank_bm25 import BM25Okapi

    from retrieval.text import tokenize

    # one sentence per id across the whole collection, one id per sentence
    by_id: dict[str, tuple[str, str]] = {}
    by_text: dict[str, str] = {}
    own: dict[str, list[dict]] = {}
    for d in DIALOGUES:
        own[d["key"]] = []
        for label, title, position, text in d["candidates"]:
            cid = sentence_id(title, position)
            if by_id.setdefault(cid, (title, text)) != (title, text):
                raise ValueError(f"{d['key']}: id {cid} is used for two different sentences")
            if by_text.setdefault(text, cid) != cid:
                raise ValueError(f"{d['key']}: sentence {text!r} has two ids")
            own[d["key"]].append({"id": cid, "title": title, "body": text, "label": label})

    records = []
    for d in DIALOGUES:
        key, group = d["key"], _group(d["key"])
        cands = list(own[key])
        if not 10 <= d["size"] <= 50 or d["size"] < len(cands):
            raise ValueError(f"{key}: size {d['size']} outside 10..50 or below its own sentences")
        pool = sorted((c for k, cs in own.items() if _group(k) != group for c in cs),
                      key=lambda c: c["id"])
        rng = random.Random(f"dsr-sample-{key}")
        taken = {c["id"] for c in cands}
        for c in rng.sample(pool, len(pool)):
            if len(cands) == d["size"]:
                break
            if c["id"] not in taken:
                taken.add(c["id"])
                cands.append({**c, "label": 0})

        users = d["users"]

        def turn(role: str, body: str, score: int) -> dict:
            author_id, author_name = users[role]
            return {"author_id": author_id, "author_name": author_name, "body": body, "score": score}

        context = [turn(*t) for t in d["context"]]
        query = " ".join([d["title"], *(t["body"] for t in context)])
        bm25 = BM25Okapi([tokenize(c["body"], stopwords=True, stem=True) for c in cands])
        scores = bm25.get_scores(tokenize(query, stopwords=True, stem=True))
        for c, s in zip(cands, scores):
            c["score"] = round(float(s), 4)
        cands.sort(key=lambda c: (-c["score"], c["id"]))
        records.append({
            "id": f"sample_{d['subreddit'].lower()}.{key}.0.{len(context)}",
            "subreddit": d["subreddit"],
            "title": d["title"],
            "context": context,
            "target": turn(*d["target"]),
            "candidates": [{"id": c["id"], "title": c["title"], "body": c["body"],
                            "score": c["score"], "label": c["label"]} for c in cands],
            "subset": d["subset"],
            "source": "sample",
        })
    return records


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--check", action="store_true",
                        help="compare with --out instead of writing; exit 1 when they differ")
    args = parser.parse_args(argv)
    text = render(build_records())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            print(f"{args.out} is out of date: run python tools/make_sample.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    from retrieval.atomic import atomic_write

    with atomic_write(args.out) as handle:
        handle.write(text)
    print(f"wrote {args.out} ({text.count(chr(10))} dialogues)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
